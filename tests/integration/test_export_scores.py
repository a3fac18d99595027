"""export-scores: the issue's columns, one row per scored candidate, Parquet and JSON Lines alike."""

from __future__ import annotations

import numpy as np
import orjson
import pyarrow.parquet as pq
import pytest

from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.engine import ScoringEngine
from capsel.cap_engine.export import export_scores
from capsel.db import open_db
from capsel.errors import CapselError
from capsel.methods.cap.scorer import CapScorer
from capsel.models.loading import describe_model, load_model
from capsel.runner.job import run_scorer
from capsel.selection.scoring_key import resolve_scoring_key
from tests.fixtures.candidates import mixed_candidates
from tests.fixtures.pool import append_candidates, tiny_model_dir

COLUMNS = [
    "candidate_id", "domain", "instruction", "input", "response", "excluded_reason", "n_aligned",
    "d_early", "d_late", "layer_divergence", "ppl", "cap", "z",
]


@pytest.fixture(scope="module")
def scored_db(tmp_path_factory):
    root = tmp_path_factory.mktemp("export")
    loaded = load_model(describe_model(str(tiny_model_dir(root / "model")), dtype="float32", device="cpu"))
    con = open_db(root / "capsel.duckdb")
    append_candidates(con, mixed_candidates(prefix="m"), domain="math")
    append_candidates(con, mixed_candidates(seed=9, prefix="c")[:4], domain="code")
    run_scorer(con, CapScorer.of(ScoringEngine(loaded, ScoringConfig(), batch_size=4)))
    yield con, loaded
    con.close()


def test_parquet_and_jsonl_carry_the_same_rows(scored_db, tmp_path):
    con, loaded = scored_db
    keys = _keys(con)
    assert keys == (loaded.info.fingerprint, ScoringConfig(prompt_format="raw").scoring_hash)
    n_parquet = export_scores(con, tmp_path / "s.parquet", *keys)
    n_jsonl = export_scores(con, tmp_path / "s.jsonl", *keys)
    table = pq.read_table(tmp_path / "s.parquet")
    lines = [orjson.loads(line) for line in (tmp_path / "s.jsonl").read_bytes().splitlines()]
    assert table.column_names == COLUMNS and list(lines[0]) == COLUMNS
    assert n_parquet == n_jsonl == table.num_rows == len(lines) == len(mixed_candidates()) + 4
    assert table.to_pylist() == lines
    assert not any(name.startswith(".") for name in (p.name for p in tmp_path.iterdir()))
    for row in lines:
        if row["excluded_reason"]:
            assert row["d_late"] is None and row["layer_divergence"] is None and row["cap"] is None
        else:
            assert len(row["layer_divergence"]) == loaded.info.n_layers and row["ppl"] > 1


def test_cap_and_z_follow_the_per_domain_ols(scored_db, tmp_path):
    con, _ = scored_db
    export_scores(con, tmp_path / "s.jsonl", *_keys(con), domain="math")
    rows = [orjson.loads(line) for line in (tmp_path / "s.jsonl").read_bytes().splitlines()]
    scored = [row for row in rows if row["excluded_reason"] is None]
    early = np.array([row["d_early"] for row in scored])
    late = np.array([row["d_late"] for row in scored])
    beta, alpha = np.polyfit(early, late, 1)
    cap = late - (alpha + beta * early)
    z = (cap - cap.mean()) / cap.std(ddof=1)
    assert [row["cap"] for row in scored] == pytest.approx(cap, abs=1e-9)
    assert [row["z"] for row in scored] == pytest.approx(z, abs=1e-6)


def test_domain_filter_and_bad_suffix(scored_db, tmp_path):
    con, _ = scored_db
    keys = _keys(con)
    assert export_scores(con, tmp_path / "code.jsonl", *keys, domain="code") == 4
    with pytest.raises(CapselError, match="parquet"):
        export_scores(con, tmp_path / "s.csv", *keys)


def test_unknown_keys_export_nothing_and_empty_db_is_clear(scored_db, tmp_path):
    con, _ = scored_db
    assert export_scores(con, tmp_path / "none.parquet", "nope", "nope") == 0
    assert pq.read_table(tmp_path / "none.parquet").column_names == COLUMNS
    empty = open_db(tmp_path / "empty.duckdb")
    with pytest.raises(CapselError, match="capsel score"):
        resolve_scoring_key(empty)
    empty.close()


def _keys(con) -> tuple[str, str]:
    key = resolve_scoring_key(con)
    return key.model_fingerprint, key.config_hash
