"""benchmarks/peer_pipeline.py --tiny runs end to end on CPU, so the GPU peer comparison cannot rot: on one float32
model the paper-style pipeline and the engine give the same ŷ, the same D_l and the same CAP ranks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def test_the_peer_and_the_engine_run_side_by_side_and_agree(tmp_path):
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "peer_pipeline.py"), "--tiny", "--threads", "1",
         "--n-candidates", "24", "--save", "--results-dir", str(tmp_path)],
        cwd=tmp_path, env={**os.environ, "OMP_NUM_THREADS": "1"}, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = orjson.loads(done.stdout)
    engine, paper = report["engine"], report["paper_style"]
    assert report["pool"]["candidates"] == 24
    assert paper["yhat"] == "hf generate", "no GPU here: the peer decodes with HF generate"
    assert str(paper["batch_size"]) in paper["seconds_per_candidate_tried"]
    assert paper["seconds"] == pytest.approx(paper["yhat_s"] + paper["forwards_s"], abs=0.01)
    assert report["ratio_engine_over_paper"] == pytest.approx(paper["seconds"] / engine["seconds"], abs=0.01)
    assert engine["candidates_per_s"] == pytest.approx(24 / engine["seconds"], rel=0.01)
    agreement = report["agreement"]
    assert agreement["candidates_both_scored"] == 24 and agreement["rows_with_other_yhat"] == 0
    assert agreement["spearman_cap_z"] > 0.999
    assert agreement["max_abs_layer_divergence_diff_same_yhat"] < 1e-5
    saved = list(tmp_path.glob("peer-*.json"))
    assert len(saved) == 1 and orjson.loads(saved[0].read_bytes())["agreement"] == agreement
