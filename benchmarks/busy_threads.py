"""Scoring on a busy machine: the engine's rate with one process spinning on one core beside it, for each thread
setting, against the same settings on the idle machine (issue #51: the default collapsed on a loaded machine).

Each setting runs `score_throughput.py --engine-only` in a process of its own (OpenMP reads its wait policy when it
starts), on the same candidates:

- `2 threads, spin`: torch's default before the fix (every core, OpenMP's active wait);
- `2 threads, passive`: every core with OMP_WAIT_POLICY=PASSIVE;
- `1 thread`;
- `default`: capsel's default now (no --threads: the free cores, measured when the command starts).

    .venv/bin/python benchmarks/busy_threads.py --model smollm2-135m-instruct --n-candidates 16

Prints one JSON object: candidates/s per setting, idle and busy.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SETTINGS = {
    "2 threads, spin": (["--threads", "2"], {"OMP_WAIT_POLICY": "ACTIVE"}),
    "2 threads, passive": (["--threads", "2"], {"OMP_WAIT_POLICY": "PASSIVE"}),
    "1 thread": (["--threads", "1"], {}),
    "default": (["--capsel-threads"], {}),
}


def rate(model: str, n_candidates: int, args: list[str], env: dict[str, str]) -> float:
    """Engine candidates/s of one score_throughput run (its one round)."""
    done = subprocess.run([sys.executable, str(HERE / "score_throughput.py"), "--model", model, "--n-candidates",
                           str(n_candidates), "--batch-size", str(n_candidates), "--repeats", "1", "--engine-only",
                           *args], env={**os.environ, **env}, capture_output=True, text=True, check=True)
    return float(json.loads(done.stdout)["engine_fused"]["candidates_per_s_best"])


def main() -> None:
    """Each setting idle, then each beside a spinning process."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--n-candidates", type=int, default=16)
    args = parser.parse_args()
    result: dict[str, dict[str, float]] = {"idle": {}, "busy (one core spinning)": {}}
    for name, (flags, env) in SETTINGS.items():
        result["idle"][name] = rate(args.model, args.n_candidates, flags, env)
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(2)  # the load the default reads is the spinner's
        for name, (flags, env) in SETTINGS.items():
            result["busy (one core spinning)"][name] = rate(args.model, args.n_candidates, flags, env)
    finally:
        spinner.kill()
        spinner.wait()
    print(json.dumps({"model": args.model, "n_candidates": args.n_candidates, "candidates_per_s": result}, indent=1))


if __name__ == "__main__":
    main()
