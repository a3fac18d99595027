"""benchmarks/gpu_throughput.py --tiny runs end to end on CPU, so the GPU benchmark script cannot rot."""

from __future__ import annotations

import datetime
import importlib.util
import os
import platform
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
import torch

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
N = 24


def _bench(*args: str, cwd: Path) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu_throughput.py"), "--tiny", "--threads", "1",
         "--n-candidates", str(N), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return orjson.loads(done.stdout)


def test_tiny_two_phase_run_reports_and_saves(tmp_path):
    report = _bench("--save", "--results-dir", str(tmp_path / "results"), cwd=tmp_path)

    generation, scoring = report["phases"]["generation"], report["phases"]["scoring"]
    assert generation["n_processed"] == scoring["n_processed"] == N
    assert scoring["n_done"] == report["tokens"]["n_scored"] == N, "the synthetic pool has no exclusions"
    for phase in (generation, scoring):
        assert phase["model_s"] > 0 and phase["write_s"] > 0
        assert phase["model_s"] + phase["write_s"] <= phase["wall_s"] + 1e-3
    total = report["end_to_end"]
    assert total["wall_s"] == pytest.approx(generation["wall_s"] + scoring["wall_s"], abs=2e-3)
    assert total["candidates_per_s"] == pytest.approx(N / total["wall_s"], rel=0.01)
    assert total["candidates_per_s_with_startup"] < total["candidates_per_s"]
    assert sum(report["split"].values()) == pytest.approx(1, abs=0.01)
    assert report["split"]["generation"] > 0 and report["split"]["scoring"] > 0 and report["split"]["writing"] > 0

    tokens = report["tokens"]
    assert N * 20 <= tokens["prompt_tokens"] <= N * 256
    assert N * 6 <= tokens["response_tokens"] <= N * 48
    assert tokens["aligned_tokens"] <= min(tokens["response_tokens"], tokens["generated_tokens"])
    per_token = report["flops"]["flop_per_token_forward"]
    assert report["flops"]["phases"]["generation"]["token_forwards"] == (
        tokens["prompt_tokens"] + tokens["generated_tokens"])
    assert per_token < 2 * report["model"]["parameters"]
    assert report["gpu"] == {"source": None, "reason": "CPU run"}
    assert report["device"]["name"] == f"cpu-{platform.machine()}"

    saved = list((tmp_path / "results").iterdir())
    assert [path.name for path in saved] == [f"cpu-x86-64-{datetime.date.today().isoformat()}.json"] or (
        platform.machine() != "x86_64")
    assert orjson.loads(saved[0].read_bytes()) == report


def test_tiny_fused_run_at_maximum_lengths(tmp_path):
    report = _bench("--generator", "fused", "--lengths", "max", cwd=tmp_path)
    assert "generation" not in report["phases"]
    assert report["phases"]["scoring"]["n_done"] == N
    # Every prompt is cut to P = 256 ids and every response to R = 48.
    assert report["tokens"]["prompt_tokens"] == 256 * N and report["tokens"]["response_tokens"] == 48 * N


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="needs vLLM (pip install 'capsel[gpu]')")
def test_tiny_vllm_route_on_cuda(tmp_path):
    report = _bench("--device", "cuda", "--generator", "vllm", "--enforce-eager", cwd=tmp_path)
    assert report["phases"]["generation"]["n_processed"] == N and report["phases"]["scoring"]["n_done"] == N
    assert report["model"]["dtype"] == "bfloat16" and report["model"]["device"] == "cuda"
    assert report["hf_peak_memory_allocated_bytes"] > 0
    assert report["gpu"]["source"] in ("nvml", "nvidia-smi")
