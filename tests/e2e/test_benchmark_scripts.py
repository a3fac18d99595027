"""Every benchmark script imports what it uses: its --help runs (the scripts are not run in full here)."""

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.fixtures.real_models import smollm2_instruct  # noqa: F401 (fixture)

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
# a script runs as __main__; the modules beside it (synthetic_llama.py, gpu_monitor.py) are imported by the scripts
SCRIPTS = sorted(path.name for path in BENCHMARKS.glob("*.py") if '__name__ == "__main__"' in path.read_text())


def test_the_scripts_are_found():
    assert {"less_cost.py", "score_throughput.py", "gpu_throughput.py", "ingest.py"} <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_benchmark_script_imports_and_shows_its_help(script):
    done = subprocess.run([sys.executable, str(BENCHMARKS / script), "--help"], capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout


@pytest.mark.slow
def test_score_throughput_times_the_plain_head_beside_the_slices_on_a_real_model(smollm2_instruct):  # noqa: F811
    """`--also-plain-head` as benchmarks/README.md runs it, on SmolLM2 (49,152 vocabulary rows, 12 slices) and
    4 rows instead of Gemma's 64: both pipelines timed, every result identical, the greedy steps' shape checked."""
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "score_throughput.py"), "--model", str(smollm2_instruct.folder),
         "--n-candidates", "4", "--repeats", "1", "--batch-size", "4", "--threads", "1", "--engine-only",
         "--also-plain-head"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    report = orjson.loads(done.stdout)
    for pipeline in ("engine_fused", "engine_fused_plain_head"):
        assert len(report[pipeline]["seconds_per_round"]) == 1
    assert report["plain_head"] == {"rows_with_other_generated_ids": 0, "max_abs_layer_divergence_diff": 0.0,
                                    "results_identical": True}
    assert report["sliced_head"]["used"]
    assert any(shape["rows"] == 4 for shape in report["sliced_head"]["shapes_checked"])
