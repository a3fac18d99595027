"""Ingest throughput: a generated 1M-row JSONL pool (~20% duplicates, 1% bad rows) into a fresh DB.

Runs `capsel ingest` as a user would, in a child process, and reports rows/s end to end
(interpreter start-up and the sha256 pass included) and peak memory: the largest sum of RSS
over the command and its parse workers, sampled every 50 ms.

    python benchmarks/ingest.py --rows 1000000 --workdir /tmp/capsel_bench [--workers 2] [--repeats 3]

Each repeat ingests into a fresh DB and prints its own line; the summary gives the median
and the best. The first run can be slower on a machine that has been idle: its kernel may
have evicted the pool file and the libraries from the page cache, and reading them back
is counted in that run's wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import orjson
import psutil

WORDS = (
    "the of and to in is that for it as with was on be by this are at from or an have not which but all "
    "their can has more one will would there were been what when if about some so they than into other "
    "energy matrix integral prime vector cell protein function array graph tree sorting python compute "
    "derive prove estimate velocity charge molecule enzyme orbit theorem lemma proof number sum product "
    "Straße ﬁnance café naïve résumé Ωmega ＡＢＣ"
).split()


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(low, high)))


def _variant(rng: random.Random, text: str) -> str:
    """Same dedup key, different bytes: case, whitespace runs, tabs and newlines."""
    choice = rng.randrange(3)
    if choice == 0:
        return text.upper()
    if choice == 1:
        return "  " + text.replace(" ", " \t ", 3) + "\n"
    return text.replace(" ", "\n", 2).title()


def _bad_line(rng: random.Random, number: int) -> bytes:
    kind = number % 5
    if kind == 0:
        return b'{"instruction": "truncated'
    if kind == 1:
        return orjson.dumps({"output": "no instruction here"})
    if kind == 2:
        return orjson.dumps({"instruction": _text(rng, 3, 8), "output": "   "})
    if kind == 3:
        return orjson.dumps({"instruction": 42, "output": "numbers are not text"})
    return b'{"instruction": "latin-1 \xe9t\xe9", "output": "x"}'


def generate_pool(path: Path, n_rows: int, seed: int = 0) -> dict[str, int]:
    """Write the pool line by line (bounded memory) and return how many rows of each kind it holds."""
    rng = random.Random(seed)
    recent: list[tuple[str, str]] = []
    counts = {"unique": 0, "duplicate": 0, "bad": 0}
    with open(path, "wb") as out:
        for number in range(n_rows):
            draw = rng.random()
            if draw < 0.01:
                out.write(_bad_line(rng, number) + b"\n")
                counts["bad"] += 1
                continue
            if draw < 0.21 and recent:
                instruction, input_text = rng.choice(recent)
                instruction = _variant(rng, instruction)
                counts["duplicate"] += 1
            else:
                instruction = f"{number}: {_text(rng, 15, 45)}"
                input_text = _text(rng, 5, 20) if rng.random() < 0.3 else ""
                if len(recent) < 10_000:
                    recent.append((instruction, input_text))
                else:
                    recent[rng.randrange(len(recent))] = (instruction, input_text)
                counts["unique"] += 1
            record = {"instruction": instruction, "input": input_text, "output": _text(rng, 30, 120)}
            out.write(orjson.dumps(record) + b"\n")
    return counts


def tree_rss(process: psutil.Process) -> int:
    """Resident memory of a process and all its descendants, in bytes."""
    total = 0
    for member in [process, *process.children(recursive=True)]:
        try:
            total += member.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def run_measured(command: list[str], env: dict[str, str], quiet: bool = False) -> dict[str, float]:
    """Run a command to completion: wall time, peak RSS of its process tree, CPU seconds used.

    CPU seconds do not depend on what else the machine runs, so they give a contention-free
    estimate next to the wall-clock rate: total CPU / cores, or the main process's CPU if larger.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = psutil.Popen(command, env=env, stdout=subprocess.DEVNULL if quiet else None)
    peak, main_cpu = 0, 0.0
    while process.poll() is None:
        try:
            peak = max(peak, tree_rss(process))
            times = process.cpu_times()
            main_cpu = times.user + times.system
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    elapsed = time.perf_counter() - started
    if process.returncode != 0:
        raise SystemExit(f"{command} failed with status {process.returncode}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    total_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": elapsed, "peak_rss": peak, "main_cpu_s": main_cpu, "total_cpu_s": total_cpu}


def main() -> None:
    """Generate the pool if needed, ingest it with the CLI, print throughput and peak memory."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/capsel_bench"))
    parser.add_argument("--workers", type=int, default=None, help="CAPSEL_INGEST_WORKERS for the run")
    parser.add_argument("--repeats", type=int, default=3, help="ingest runs, each into a fresh DB")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    pool = args.workdir / f"pool_{args.rows}.jsonl"
    if not pool.exists():
        started = time.perf_counter()
        counts = generate_pool(pool, args.rows)
        size_mib = pool.stat().st_size / 2**20
        print(f"generated {pool} ({size_mib:.0f} MiB) in {time.perf_counter() - started:.1f}s: {counts}")
    command = [sys.executable, "-m", "capsel", "ingest", str(pool), "--domain", "bench",
               "--db", str(args.workdir / "bench.duckdb")]
    env = dict(os.environ)
    if args.workers is not None:
        env["CAPSEL_INGEST_WORKERS"] = str(args.workers)
    runs = []
    for repeat in range(1, args.repeats + 1):
        m = measure_once(command, env, args, quiet=repeat > 1)
        runs.append({**m, "rows_per_s": args.rows / m["wall_s"]})
        print(f"run {repeat}/{args.repeats}: " + describe(m, args.rows, env))
    rates = [run["rows_per_s"] for run in runs]
    largest_rss = max(run["peak_rss"] for run in runs)
    print(f"summary over {args.repeats} runs: median {statistics.median(rates):,.0f} rows/s, "
          f"best {max(rates):,.0f} rows/s, worst {min(rates):,.0f} rows/s; "
          f"largest peak RSS {largest_rss / 2**30:.2f} GiB")
    print(json.dumps({
        "rows": args.rows, "workers": env.get("CAPSEL_INGEST_WORKERS", "default"),
        "median_rows_per_s": statistics.median(rates), "largest_peak_rss_bytes": largest_rss, "runs": runs,
    }))


def measure_once(command: list[str], env: dict[str, str], args: argparse.Namespace, quiet: bool) -> dict:
    """One ingest of the pool into a fresh DB, with the machine's load before it and the DB size after."""
    db = args.workdir / "bench.duckdb"
    for stale in (db, db.with_suffix(".duckdb.wal")):
        stale.unlink(missing_ok=True)
    load_before = os.getloadavg()[0]
    m = run_measured(command, env, quiet)
    return {**m, "load_before": load_before, "db_bytes": db.stat().st_size}


def describe(m: dict, rows: int, env: dict[str, str]) -> str:
    """A run's rate, memory and CPU use in two lines."""
    cores = len(os.sched_getaffinity(0))
    idle_estimate = rows / max(m["main_cpu_s"], m["total_cpu_s"] / cores)
    return (
        f"rows: {rows:,}  wall: {m['wall_s']:.1f}s  rate: {rows / m['wall_s']:,.0f} rows/s  "
        f"peak RSS (command + workers): {m['peak_rss'] / 2**30:.2f} GiB  db: {m['db_bytes'] / 2**20:.0f} MiB\n"
        f"  cpu: main {m['main_cpu_s']:.1f}s, all processes {m['total_cpu_s']:.1f}s on {cores} cores "
        f"(workers: {env.get('CAPSEL_INGEST_WORKERS', 'default')}); load average before: {m['load_before']:.1f}; "
        f"rate if the cores were idle (CPU-bound estimate): {idle_estimate:,.0f} rows/s"
    )


if __name__ == "__main__":
    main()
