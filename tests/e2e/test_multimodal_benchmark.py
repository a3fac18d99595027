"""benchmarks/multimodal_throughput.py --tiny runs end to end on CPU, so the GPU script cannot rot."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def test_tiny_run_scores_every_candidate_and_reports(tmp_path):
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "multimodal_throughput.py"), "--tiny", "--n-candidates", "3",
         "--save", "--results-dir", str(tmp_path / "results")],
        cwd=tmp_path, env={**os.environ, "OMP_NUM_THREADS": "1"}, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = orjson.loads(done.stdout)
    saved = Path(done.stderr.rsplit("saved ", 1)[1].strip())
    assert saved.parent == tmp_path / "results" and saved.name.startswith("multimodal_throughput-cpu-")
    assert orjson.loads(saved.read_bytes()) == report
    assert report["n_candidates"] == report["n_scored"] == 3 and report["excluded"] == []
    # one 28 px picture is 4 image tokens in the tiny Llava, on top of the question's text ids
    assert report["prompt_ids_mean"] > 40 and 0 < report["generated_ids_mean"] <= 48
    # both times are rounded to 0.01 s, which on a run of a fraction of a second moves the rate by several percent
    spent = report["prepare_s"] + report["model_s"]
    assert 3 / (spent + 0.01) - 0.001 <= report["candidates_per_s"] <= 3 / max(spent - 0.01, 1e-6) + 0.001
