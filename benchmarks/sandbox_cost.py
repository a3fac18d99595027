"""What HumanEval's sandbox costs a program: wall time per canonical solution through the sandbox as it is, beside an
earlier `harness_execution.py` (its `run_program(program, folder, timeout_s, python, bwrap)`), alternated round by
round on the same programs.

    git show 4f497a5:capsel/evaluation/harness_execution.py > /tmp/before_sandbox.py
    .venv/bin/python benchmarks/sandbox_cost.py --before /tmp/before_sandbox.py --problems 40 --rounds 3
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from capsel.evaluation.sandbox import build_program, find_bwrap, run_program
from capsel.evaluation.seccomp_filter import write_seccomp_filter

REAL = Path(__file__).resolve().parents[1] / "capsel" / "data" / "real" / "humaneval.jsonl"


def _programs(n: int) -> list[str]:
    rows = [json.loads(line) for line in REAL.read_text().splitlines()][:n]
    return [build_program(row["prompt"], row["canonical_solution"], row["test"], row["entry_point"]) for row in rows]


def _timed(run, programs: list[str]) -> tuple[float, int]:
    """Milliseconds per program, and how many passed."""
    started, passed = time.perf_counter(), 0
    for program in programs:
        passed += bool(run(program))
    return 1000 * (time.perf_counter() - started) / len(programs), passed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=40, help="canonical solutions timed per round")
    parser.add_argument("--rounds", type=int, default=3, help="alternated rounds")
    parser.add_argument("--before", type=Path, help="an earlier harness_execution.py to time beside the sandbox")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    programs = _programs(args.problems)
    work = Path(tempfile.mkdtemp(prefix="sandbox-cost-"))
    seccomp = write_seccomp_filter(work / "seccomp.bpf")
    bwrap = find_bwrap()
    runs = {"after": lambda program: run_program(program, work / "after", seccomp_filter=seccomp, bwrap=bwrap)}
    if args.before is not None:
        spec = importlib.util.spec_from_file_location("before_sandbox", args.before)
        assert spec is not None and spec.loader is not None
        before = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(before)
        runs = {"before": lambda program: before.run_program(program, work / "before", bwrap=bwrap), **runs}
    timings: dict[str, list[float]] = {name: [] for name in runs}
    passed: dict[str, int] = {}
    for _ in range(args.rounds):
        for name, run in runs.items():
            ms, passed[name] = _timed(run, programs)
            timings[name].append(round(ms, 1))
    result = {"problems": len(programs), "rounds": args.rounds, "as_root": os.geteuid() == 0, "cores": os.cpu_count(),
              "ms_per_program": timings, "median_ms_per_program": {n: statistics.median(t) for n, t in timings.items()},
              "passed_per_round": passed}
    print(json.dumps(result, indent=1))
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
