"""Ingest into real DuckDB files: dedup as the paper does, lineage, quarantine, counts, atomicity."""

from __future__ import annotations

import shutil
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from capsel.errors import CapselError
from capsel.ingest.dedup_key import candidate_id, dedup_key
from capsel.ingest.pipeline import IngestOptions, ingest
from capsel.ingest.reasons import IMAGE_REASONS, Reason
from capsel.ingest.records import parse_field_map
from tests.integration.pool_files import table, write_jsonl
from tests.support.interrupts import interrupt_after_first_chunk

MATH = IngestOptions(domain="math")


def test_variants_dedup_to_the_first_occurrence(db, tmp_path):
    rows = [
        {"instruction": "What is the Straße length?", "output": "first"},
        {"instruction": "WHAT IS THE STRASSE LENGTH?", "output": "casefold variant"},
        {"instruction": "Ｗｈａｔ ｉｓ ｔｈｅ Ｓｔｒａßｅ ｌｅｎｇｔｈ？", "output": "full-width variant"},
        {"instruction": "  what\tis the\nstrasse   length? ", "output": "whitespace variant"},
        {"instruction": "What is the Straße length?", "input": "in metres", "output": "input differs"},
        {"instruction": "What is the Straße length?", "input": "IN  METRES", "output": "same input, other case"},
    ]
    report = ingest(db, [write_jsonl(tmp_path / "pool.jsonl", rows)], MATH)
    candidates = table(db, "candidates")
    assert candidates["source_row"].tolist() == [1, 5]
    assert candidates["response"].tolist() == ["first", "input differs"]
    assert candidates["instruction"].tolist()[0] == "What is the Straße length?"  # stored as given
    assert candidates["input"].tolist() == ["", "in metres"]
    expected_ids = [candidate_id("math", dedup_key(r["instruction"], r.get("input", ""))) for r in rows]
    assert candidates["candidate_id"].tolist() == [expected_ids[0], expected_ids[4]]
    duplicates = table(db, "duplicates")
    assert duplicates["source_row"].tolist() == [2, 3, 4, 6]
    assert duplicates["candidate_id"].tolist() == [expected_ids[0]] * 3 + [expected_ids[4]]
    assert report.totals().n_read == 6


def test_same_key_in_two_domains_is_two_candidates(db, tmp_path):
    rows = [{"instruction": "Explain entropy.", "output": "a", "domain": "physics"},
            {"instruction": "explain entropy.", "output": "b", "domain": "chemistry"}]
    ingest(db, [write_jsonl(tmp_path / "pool.jsonl", rows)], IngestOptions())
    assert sorted(table(db, "candidates")["domain"]) == ["chemistry", "physics"]


def test_incremental_ingest_dedups_against_earlier_runs(db, tmp_path):
    first = write_jsonl(tmp_path / "a.jsonl", [{"instruction": f"Q{i}", "output": "old"} for i in range(5)])
    second = write_jsonl(tmp_path / "b.jsonl", [{"instruction": f"q{i}", "output": "new"} for i in range(3, 8)])
    ingest(db, [first], MATH)
    report = ingest(db, [second], MATH)
    [counts] = report.domains
    assert (counts.n_read, counts.n_inserted, counts.n_duplicates) == (5, 3, 2)
    candidates = table(db, "candidates")
    assert len(candidates) == 8
    kept = candidates.set_index("candidate_id")
    for i in (3, 4):  # the earlier run's rows win
        assert kept.loc[candidate_id("math", dedup_key(f"Q{i}")), "response"] == "old"


def test_files_of_one_run_dedup_in_argument_order(db, tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", [{"instruction": "same", "output": "from a"}])
    b = write_jsonl(tmp_path / "b.jsonl", [{"instruction": "SAME", "output": "from b"}])
    ingest(db, [b, a], MATH)
    assert table(db, "candidates")["response"].tolist() == ["from b"]


def test_reingest_of_same_content_is_a_noop(db, tmp_path):
    path = write_jsonl(tmp_path / "pool.jsonl", [{"instruction": "q", "output": "a"}, b"broken"])
    first = ingest(db, [path], MATH)
    before = {name: table(db, name) for name in ("candidates", "duplicates", "quarantine", "sources")}
    copy = tmp_path / "copy.jsonl"
    shutil.copy(path, copy)
    again = ingest(db, [path, copy], MATH)
    assert [f.already_ingested_by for f in again.files] == [first.run_id, first.run_id]
    assert again.domains == []
    for name, frame in before.items():
        assert table(db, name).equals(frame), name


def quarantine_pool(tmp_path):
    """One file per format, together holding a row for every quarantine reason."""
    jsonl = write_jsonl(tmp_path / "bad.jsonl", [
        {"instruction": "fine", "output": "ok", "domain": "d"},
        b'{"instruction": "truncated',
        b"[1, 2]",
        b'{"instruction": "caf\xe9", "output": "x", "domain": "d"}',
        {"output": "x", "domain": "d"},
        {"instruction": "   ", "output": "x", "domain": "d"},
        {"instruction": "q1", "domain": "d"},
        {"instruction": "q2", "output": "\n", "domain": "d"},
        {"instruction": 5, "output": "x", "domain": "d"},
        {"instruction": "q3", "output": "x" * 50, "domain": "d"},
        {"instruction": "q4", "output": "x"},
        {"messages": {"role": "user"}, "domain": "d"},
        b'{"instruction": "q5", "output": "x", "instruction": "q6", "domain": "d"}',
        # over 64 x max_field_chars (40) + 1 MiB: read past, never held
        b'{"instruction": "huge", "output": "' + b"y" * (2 << 20) + b'", "domain": "d"}',
    ])
    csv = tmp_path / "bad.csv"
    csv.write_bytes(b"instruction,output,domain\nfine csv,ok,d\ntoo,many,fields,here\n"
                    b'"' + b"x" * 600 + b'",ok,d\n"never closed,ok,d\n')
    return [jsonl, csv], {
        ("bad.jsonl", 2): Reason.NOT_JSON, ("bad.jsonl", 3): Reason.NOT_AN_OBJECT,
        ("bad.jsonl", 4): Reason.INVALID_UTF8, ("bad.jsonl", 5): Reason.MISSING_INSTRUCTION,
        ("bad.jsonl", 6): Reason.EMPTY_INSTRUCTION, ("bad.jsonl", 7): Reason.MISSING_RESPONSE,
        ("bad.jsonl", 8): Reason.EMPTY_RESPONSE, ("bad.jsonl", 9): Reason.NON_STRING_FIELD,
        ("bad.jsonl", 10): Reason.OVERSIZED_FIELD, ("bad.jsonl", 11): Reason.NO_DOMAIN,
        ("bad.jsonl", 12): Reason.INVALID_MESSAGES, ("bad.jsonl", 13): Reason.DUPLICATE_KEY,
        ("bad.jsonl", 14): Reason.OVERSIZED_LINE,
        ("bad.csv", 2): Reason.BAD_CSV_ROW, ("bad.csv", 3): Reason.OVERSIZED_RECORD,
        ("bad.csv", 4): Reason.UNTERMINATED_QUOTE,
    }


def test_every_quarantine_reason_lands_with_file_row_and_raw_text(db, tmp_path):
    paths, expected = quarantine_pool(tmp_path)
    report = ingest(db, paths, IngestOptions(max_field_chars=40))
    # the pool really covers every reason (those of rows with images: test_ingest_images.py)
    assert set(expected.values()) == set(Reason) - IMAGE_REASONS
    sources = table(db, "sources").set_index("source_id")["path"].map(lambda p: p.rsplit("/", 1)[-1])
    quarantine = table(db, "quarantine")
    got = {(sources[row.source_id], row.source_row): row.reason for row in quarantine.itertuples()}
    assert got == {key: str(reason) for key, reason in expected.items()}
    raw = {(sources[row.source_id], row.source_row): row.raw_text for row in quarantine.itertuples()}
    assert raw[("bad.jsonl", 4)] == '{"instruction": "caf\ufffd", "output": "x", "domain": "d"}'
    assert raw[("bad.jsonl", 2)] == '{"instruction": "truncated'
    assert raw[("bad.csv", 2)] == "too,many,fields,here"
    by_domain = {d.domain: d for d in report.domains}
    assert raw[("bad.csv", 4)] == '"never closed,ok,d'
    assert raw[("bad.jsonl", 14)] == '{"instruction": "huge", "output": "' + "y" * (256 - 35)  # its first bytes only
    assert by_domain["(none)"].n_quarantined == 9  # JSONL rows 2, 3, 4, 11, 13, 14 and the CSV rows lack a domain
    assert by_domain["d"].n_inserted == 2


def test_counts_add_up_per_domain_and_per_source(db, tmp_path):
    paths, expected = quarantine_pool(tmp_path)
    dup = write_jsonl(tmp_path / "dup.jsonl", [{"instruction": "FINE", "output": "again", "domain": "d"}] * 3)
    report = ingest(db, [*paths, dup], IngestOptions(max_field_chars=40))
    for counts in [*report.domains, report.totals()]:
        assert counts.n_read == counts.n_inserted + counts.n_duplicates + counts.n_quarantined + counts.n_sampled_out
    assert report.totals().n_read == 14 + 4 + 3
    assert report.totals().n_duplicates == 3
    sources = table(db, "sources")
    assert (sources["n_rows_read"] == sources["n_inserted"] + sources["n_duplicates"]
            + sources["n_quarantined"] + sources["n_sampled_out"]).all()
    assert sorted(sources["n_rows_read"]) == [3, 4, 14]


def test_missing_or_unsupported_path_fails_before_anything_is_written(db, tmp_path):
    good = write_jsonl(tmp_path / "good.jsonl", [{"instruction": "q", "output": "a"}])
    (tmp_path / "notes.txt").write_text("hello")
    for bad in (tmp_path / "missing.jsonl", tmp_path / "notes.txt", tmp_path / "empty_dir"):
        if bad.name == "empty_dir":
            bad.mkdir()
        with pytest.raises(CapselError):
            ingest(db, [good, bad], MATH)
    for name in ("runs", "sources", "candidates", "quarantine"):
        assert len(table(db, name)) == 0, name


def test_interrupted_file_leaves_nothing_and_reruns_cleanly(db, tmp_path):
    rows = [{"instruction": f"q{i % 40}", "output": "a"} for i in range(100)] + [b"bad"]
    path = write_jsonl(tmp_path / "pool.jsonl", rows)
    done = write_jsonl(tmp_path / "done.jsonl", [{"instruction": "kept", "output": "a"}])

    options = IngestOptions(domain="math", chunk_rows=10)
    with pytest.raises(KeyboardInterrupt):
        ingest(db, [done, path], options, progress=interrupt_after_first_chunk(path))
    assert table(db, "sources")["path"].tolist() == [str(done)]  # the finished file is committed
    assert len(table(db, "candidates")) == 1
    assert table(db, "runs")["status"].tolist() == ["interrupted"]
    report = ingest(db, [done, path], options)
    assert [f.already_ingested_by is not None for f in report.files] == [True, False]
    [counts] = report.domains
    assert (counts.n_read, counts.n_inserted, counts.n_duplicates, counts.n_quarantined) == (101, 40, 60, 1)


def test_parquet_csv_and_json_array_with_field_map(db, tmp_path):
    pq.write_table(pa.table({"problem": ["P1", "p1"], "solution": ["S1", "S2"]}), tmp_path / "a.parquet")
    (tmp_path / "b.csv").write_text("problem,solution\nP2,S\n\"P1\",S3\n")
    (tmp_path / "c.json").write_text('[{"problem": "P3", "solution": "S"}, {"problem": "p2 ", "solution": "S"}]')
    options = IngestOptions(domain="math", fields=parse_field_map(["instruction=problem,response=solution"]))
    report = ingest(db, [tmp_path / "a.parquet", tmp_path / "b.csv", tmp_path / "c.json"], options)
    assert sorted(table(db, "candidates")["instruction"]) == ["P1", "P2", "P3"]
    assert report.totals().n_duplicates == 3
    assert table(db, "duplicates")["source_row"].tolist() == [2, 2, 2]


def test_folder_argument_ingests_its_pool_files_by_name(db, tmp_path):
    folder = tmp_path / "shards"
    folder.mkdir()
    write_jsonl(folder / "b.jsonl", [{"instruction": "dup", "output": "from b"}])
    write_jsonl(folder / "a.jsonl", [{"instruction": "DUP", "output": "from a"}])
    (folder / "README.md").write_text("not a pool file")
    report = ingest(db, [folder], MATH)
    assert [f.path.name for f in report.files] == ["a.jsonl", "b.jsonl"]
    assert table(db, "candidates")["response"].tolist() == ["from a"]


def test_worker_processes_give_the_same_result_as_one_process(tmp_path):
    from capsel.db import open_db

    rows = [{"instruction": f"Q{i % 700}", "input": str(i % 3), "output": f"a{i}", "domain": f"d{i % 2}"}
            for i in range(3000)] + [b"oops", {"instruction": 1, "output": "x", "domain": "d0"}]
    path = write_jsonl(tmp_path / "pool.jsonl", rows)
    frames = []
    for workers in (0, 2):
        con = open_db(tmp_path / f"w{workers}.duckdb")
        ingest(con, [path], IngestOptions(chunk_rows=250, workers=workers, parallel_min_bytes=0))
        frames.append({name: table(con, name).drop(columns=["ingest_run_id", "created_at"], errors="ignore")
                       for name in ("candidates", "duplicates", "quarantine")})
        con.close()
    for name in frames[0]:
        assert frames[0][name].equals(frames[1][name]), name
    assert len(frames[0]["candidates"]) == 700 * 3 * 2 // 2  # (instruction, input) pairs per domain


def test_worker_chunk_files_are_removed_after_success_and_after_an_interrupt(db, tmp_path, monkeypatch):
    scratch_root = tmp_path / "tmp"
    scratch_root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch_root))
    rows = [{"instruction": f"Q{i}", "output": "a"} for i in range(400)]
    path = write_jsonl(tmp_path / "pool.jsonl", rows)
    options = IngestOptions(domain="math", chunk_rows=50, workers=2, parallel_min_bytes=0)

    def interrupt_midway(file, step, done_bytes, total):
        if done_bytes > total // 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ingest(db, [path], options, progress=interrupt_midway)
    assert list(scratch_root.iterdir()) == []
    assert len(table(db, "candidates")) == 0
    report = ingest(db, [path], options)
    assert report.totals().n_inserted == 400
    assert list(scratch_root.iterdir()) == []


def test_chunk_size_does_not_change_the_outcome(tmp_path):
    from capsel.db import open_db

    rows = [{"instruction": f"Q{i % 17}", "output": f"a{i}", "domain": f"d{i % 3}"} for i in range(120)]
    rows[50] = b"{broken"
    path = write_jsonl(tmp_path / "pool.jsonl", rows)
    results = []
    for chunk_rows in (1, 7, 10_000):
        con = open_db(tmp_path / f"c{chunk_rows}.duckdb")
        ingest(con, [path], IngestOptions(chunk_rows=chunk_rows))
        results.append({name: table(con, name).drop(columns=["ingest_run_id", "created_at"], errors="ignore")
                        for name in ("candidates", "duplicates", "quarantine")})
        con.close()
    for other in results[1:]:
        for name, frame in results[0].items():
            assert frame.equals(other[name]), name
    first_rows: dict = {}
    for i in range(120):
        if i != 50:
            first_rows.setdefault((i % 17, i % 3), i + 1)
    assert sorted(results[0]["candidates"]["source_row"]) == sorted(first_rows.values())

