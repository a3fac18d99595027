"""The scoring commands as a user types them: score part, resume, export."""

from __future__ import annotations

import os
import subprocess
import sys

import orjson
import pandas as pd
import pytest

from capsel.db import open_db
from tests.fixtures.candidates import mixed_candidates
from tests.fixtures.pool import append_candidates, tiny_model_dir
from tests.fixtures.vllm import VLLM_RUNS

pytestmark = pytest.mark.e2e


def _capsel(*args: str, cwd) -> subprocess.CompletedProcess:
    # One thread: tiny models on a shared 2-core machine are much slower with two.
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CAPSEL_OUTPUT_ROOT": str(cwd / "out"), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "capsel", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
    )


def test_score_resume_and_export(tmp_path, tmp_path_factory):
    model = tiny_model_dir(tmp_path / "model")
    con = open_db(tmp_path / "capsel.duckdb")
    append_candidates(con, mixed_candidates())
    con.close()
    common = ["--model", str(model), "--db", "capsel.duckdb", "--batch-size", "4", "--device", "cpu"]

    first = _capsel("score", *common, "--limit", "6", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "processed this run" in first.stdout and "│ 6" in first.stdout.split("processed this run")[1][:40]

    second = _capsel("score", *common, cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    skipped = second.stdout.split("skipped (already done)")[1][:40]
    assert "6" in skipped and "excluded: empty_generation" in first.stdout + second.stdout

    # score generated every y-hat on the way, so generate finds nothing left to do
    generated = _capsel("generate", *common, cwd=tmp_path)
    assert generated.returncode == 0, generated.stderr
    assert "14" in generated.stdout.split("skipped (already done)")[1][:40]

    # a typed --out is taken as typed: relative to the working directory, absolute as is, never under the root
    exported = _capsel("export-scores", "--db", "capsel.duckdb", "--out", "scores.parquet", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    ids = pd.read_parquet(tmp_path / "scores.parquet")["candidate_id"]
    assert sorted(ids) == sorted(c["candidate_id"] for c in mixed_candidates())
    typed = tmp_path_factory.mktemp("typed") / "scores.jsonl"
    absolute = _capsel("export-scores", "--db", "capsel.duckdb", "--out", str(typed), cwd=tmp_path)
    assert absolute.returncode == 0, absolute.stderr
    rows = [orjson.loads(line) for line in typed.read_bytes().splitlines()]
    assert sorted(row["candidate_id"] for row in rows) == sorted(ids)
    assert not (tmp_path / "out" / "scores.parquet").exists() and not (tmp_path / "out" / "scores.jsonl").exists()


def test_user_errors_are_one_line(tmp_path):
    no_db = _capsel("score", "--model", str(tiny_model_dir(tmp_path / "tiny")), "--db", "mistyped.duckdb", cwd=tmp_path)
    assert no_db.returncode == 3 and "Traceback" not in no_db.stderr
    assert "no capsel database at mistyped.duckdb" in no_db.stderr and "--db" in no_db.stderr
    assert not (tmp_path / "mistyped.duckdb").exists()
    assert _capsel("migrate", "--db", "x.duckdb", cwd=tmp_path).returncode == 0
    missing = _capsel("score", "--model", str(tmp_path / "nope"), "--db", "x.duckdb", cwd=tmp_path)
    assert missing.returncode == 3 and "Traceback" not in missing.stderr
    assert "neither a model folder nor a hub id" in missing.stderr
    bad = _capsel("score", "--model", "m", "--horizon", "3", "--db", "x.duckdb", cwd=tmp_path)
    assert bad.returncode == 2 and "horizon 3 is below min_response_tokens" in bad.stderr
    if not VLLM_RUNS:
        model = tiny_model_dir(tmp_path / "model")
        vllm = _capsel("score", "--model", str(model), "--generator", "vllm", "--db", "x.duckdb", cwd=tmp_path)
        assert vllm.returncode == 3 and "Traceback" not in vllm.stderr
        assert "--generator vllm needs" in vllm.stderr
