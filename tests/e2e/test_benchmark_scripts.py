"""Every benchmark script imports what it uses: its --help runs (the scripts are not run in full here)."""

import subprocess
import sys
from pathlib import Path

import pytest

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
