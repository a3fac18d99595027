"""`capsel score --generator vllm` as a user types it, on the demo pool with SmolLM2: same rows as `--generator hf`.

Runs under vLLM's CPU build (`make test-vllm`); skipped where vLLM cannot start.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import duckdb
import pytest

from capsel.data import sample_pool
from tests.fixtures.real_models import REAL_MODELS_DIR, smollm2_instruct  # noqa: F401 (fixture)
from tests.fixtures.vllm import requires_vllm

pytestmark = [pytest.mark.vllm, pytest.mark.e2e, pytest.mark.slow, requires_vllm]

# P = 40 cuts every chat prompt of the math file (48-50 ids); R = 24 and 12 candidates keep two cores' work short.
SCORE = ["--prompt-tokens", "40", "--horizon", "24", "--limit", "12"]


def capsel(cwd, *args: str, **env: str) -> subprocess.CompletedProcess:
    base = {key: value for key, value in os.environ.items() if not key.startswith("CAPSEL_")}
    done = subprocess.run([sys.executable, "-m", "capsel", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={**base, "COLUMNS": "200", **env})
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def rows(db, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.sql(sql).fetchall()


def test_score_with_vllm_stores_what_hf_stores(tmp_path, smollm2_instruct):  # noqa: F811
    folder, manifest = sample_pool()
    math = next(entry for entry in manifest["files"] if entry.get("domain") == "math")
    capsel(tmp_path, "ingest", str(folder / math["file"]), "--domain", "math", "--map", math["map"], "--db", "hf.duckdb")
    shutil.copy(tmp_path / "hf.duckdb", tmp_path / "vllm.duckdb")
    env = {"CAPSEL_MODELS_DIR": str(REAL_MODELS_DIR), "CAPSEL_VLLM_ENFORCE_EAGER": "1"}
    model = ["--model", "smollm2-135m-instruct"]

    vllm = capsel(tmp_path, "score", *model, *SCORE, "--generator", "vllm", "--db", "vllm.duckdb", "--json", **env)
    capsel(tmp_path, "score", *model, *SCORE, "--generator", "hf", "--db", "hf.duckdb", **env)

    # stdout is the one JSON object alone (vLLM's engine processes log to stderr): vLLM wrote every
    # y-hat first, then HF scored them all without generating one.
    summary = json.loads(vllm.stdout)
    assert summary["generation"]["n_done"] == 12 and summary["scoring"]["n_done"] == 12
    assert summary["scoring"]["n_generated"] == 0
    assert "vllm" in vllm.stderr.lower()
    generations = "SELECT candidate_id, prompt_ids, generated_ids, excluded_reason FROM generations ORDER BY 1"
    from_vllm, from_hf = rows(tmp_path / "vllm.duckdb", generations), rows(tmp_path / "hf.duckdb", generations)
    assert len(from_vllm) == 12 and from_vllm == from_hf
    assert {len(row[1]) for row in from_vllm} == {40}, "every chat prompt is cut to P"
    assert rows(tmp_path / "vllm.duckdb", "SELECT DISTINCT generator FROM generations") == [("vllm",)]

    divergences = "SELECT candidate_id, n_aligned, layer_divergence, d_early, d_late, ppl FROM divergences ORDER BY 1"
    scored_vllm, scored_hf = rows(tmp_path / "vllm.duckdb", divergences), rows(tmp_path / "hf.duckdb", divergences)
    assert [row[:2] for row in scored_vllm] == [row[:2] for row in scored_hf]
    for a, b in zip(scored_vllm, scored_hf):
        assert a[2] == pytest.approx(b[2], abs=1e-5) and a[3:] == pytest.approx(b[3:], rel=1e-5)
