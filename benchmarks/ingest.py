"""Ingest throughput: a generated 1M-row JSONL pool (~20% duplicates, 1% bad rows) into a fresh DB.

Runs `capsel ingest` as a user would, in a child process, and reports rows/s end to end
(interpreter start-up included) and the child's peak RSS.

    python benchmarks/ingest.py --rows 1000000 --workdir /tmp/capsel_bench
"""

from __future__ import annotations

import argparse
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

import orjson

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


def main() -> None:
    """Generate the pool if needed, ingest it with the CLI, print throughput and peak memory."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/capsel_bench"))
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    pool = args.workdir / f"pool_{args.rows}.jsonl"
    if not pool.exists():
        started = time.perf_counter()
        counts = generate_pool(pool, args.rows)
        print(f"generated {pool} ({pool.stat().st_size / 2**20:.0f} MiB) in {time.perf_counter() - started:.1f}s: {counts}")
    db = args.workdir / "bench.duckdb"
    for stale in (db, db.with_suffix(".duckdb.wal")):
        stale.unlink(missing_ok=True)
    command = [sys.executable, "-m", "capsel", "ingest", str(pool), "--domain", "bench", "--db", str(db)]
    started = time.perf_counter()
    subprocess.run(command, check=True)
    elapsed = time.perf_counter() - started
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(f"rows: {args.rows:,}  wall: {elapsed:.1f}s  rate: {args.rows / elapsed:,.0f} rows/s  "
          f"peak RSS: {peak_kib / 2**20:.2f} GiB  db: {db.stat().st_size / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
