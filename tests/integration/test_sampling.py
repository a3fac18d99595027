"""`ingest --sample`: N new unique candidates per domain, the same draw everywhere."""

from __future__ import annotations

import hashlib

from capsel.db import open_db
from capsel.ingest.pipeline import IngestOptions, ingest
from tests.integration.pool_files import table, write_jsonl


def pool(tmp_path, name="pool.jsonl", start=0, stop=300):
    rows = []
    for i in range(start, stop):
        domain = "math" if i % 3 else "code"
        rows.append({"instruction": f"Task {i}", "output": "a", "domain": domain})
        if i % 5 == 0:
            rows.append({"instruction": f"TASK {i}", "output": "dup", "domain": domain})
    rows.append(b"not json")
    return write_jsonl(tmp_path / name, rows)


def reference_draw(candidates, n: int, seed: int) -> set[str]:
    """The documented draw, computed independently: per domain the n smallest sha256(seed, U+001F, id)."""
    chosen = set()
    for _, group in candidates.groupby("domain"):
        ids = sorted(group["candidate_id"], key=lambda cid: (hashlib.sha256(f"{seed}\x1f{cid}".encode()).digest(), cid))
        chosen.update(ids[:n])
    return chosen


def ingest_into(path, files, **options):
    con = open_db(path)
    report = ingest(con, files, IngestOptions(**options))
    frames = {name: table(con, name) for name in ("candidates", "duplicates", "sampled_out", "quarantine")}
    con.close()
    return report, frames


def test_sample_matches_reference_and_is_independent_of_db_and_chunk_size(tmp_path):
    files = [pool(tmp_path)]
    _, full = ingest_into(tmp_path / "full.duckdb", files)
    expected = reference_draw(full["candidates"], 40, seed=0)
    results = [ingest_into(tmp_path / f"s{chunk}.duckdb", files, sample_size=40, seed=0, chunk_rows=chunk)
               for chunk in (7, 1000)]
    for report, frames in results:
        assert set(frames["candidates"]["candidate_id"]) == expected
        assert len(frames["sampled_out"]) == len(full["candidates"]) - 80
        assert set(frames["sampled_out"]["candidate_id"]) | expected == set(full["candidates"]["candidate_id"])
        assert frames["duplicates"][["source_row", "candidate_id"]].equals(full["duplicates"][["source_row", "candidate_id"]])
        for counts in report.domains:
            assert counts.n_read == counts.n_inserted + counts.n_duplicates + counts.n_quarantined + counts.n_sampled_out
        assert {d.domain: d.n_inserted for d in report.domains} == {"(none)": 0, "code": 40, "math": 40}
    assert results[0][1]["candidates"].equals(results[1][1]["candidates"].assign(
        created_at=results[0][1]["candidates"]["created_at"], ingest_run_id=results[0][1]["candidates"]["ingest_run_id"]))


def test_another_seed_draws_another_sample(tmp_path):
    files = [pool(tmp_path)]
    _, seed0 = ingest_into(tmp_path / "a.duckdb", files, sample_size=40, seed=0)
    _, seed1 = ingest_into(tmp_path / "b.duckdb", files, sample_size=40, seed=1)
    assert set(seed0["candidates"]["candidate_id"]) != set(seed1["candidates"]["candidate_id"])


def test_sample_larger_than_pool_keeps_everything(tmp_path):
    files = [pool(tmp_path, stop=30)]
    report, frames = ingest_into(tmp_path / "a.duckdb", files, sample_size=1000)
    assert report.totals().n_sampled_out == 0
    assert len(frames["candidates"]) == 30


def test_sample_spans_the_files_of_a_run_and_only_new_candidates(tmp_path):
    first, second = pool(tmp_path, "a.jsonl", 0, 150), pool(tmp_path, "b.jsonl", 100, 300)
    db = tmp_path / "a.duckdb"
    report, frames = ingest_into(db, [first, second], sample_size=25)
    assert {d.domain: d.n_inserted for d in report.domains if d.domain != "(none)"} == {"code": 25, "math": 25}
    # a later run draws only among its own new candidates, deduped against everything kept so far
    third = pool(tmp_path, "c.jsonl", 250, 400)
    con = open_db(db)
    later = ingest(con, [third], IngestOptions(sample_size=10))
    con.close()
    assert {d.domain: d.n_inserted for d in later.domains if d.domain != "(none)"} == {"code": 10, "math": 10}
