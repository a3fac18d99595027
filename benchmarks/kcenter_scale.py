"""Greedy k-center at scale: python benchmarks/kcenter_scale.py --points 1000000 --dim 384 --centers 200.

Draws unit-normalised random float32 points (what the MiniLM embeddings look like to the algorithm),
runs `greedy_k_center` and prints the time per selected center and the process's peak RSS beside the
size of the points themselves. With --through-db the points are first stored in the `embeddings`
table of a throwaway DuckDB file and selected with `select_coverage`, as `capsel select --method
kcenter` does (load from DuckDB included), in a fresh process whose own peak RSS is printed.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from capsel.db import open_db
from capsel.selection.budget import Quota
from capsel.selection.coverage import select_coverage
from capsel.selection.farthest_point import greedy_k_center
from capsel.selection.scoring_key import ScoringKey


def peak_rss_gib() -> float:
    """Peak resident set size of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def random_unit_points(n: int, dim: int, seed: int) -> np.ndarray:
    """n unit vectors in float32, generated in blocks so no float64 copy of the whole set exists."""
    rng = np.random.default_rng(seed)
    points = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 100_000):
        block = rng.standard_normal((min(100_000, n - start), dim), dtype=np.float32)
        points[start:start + len(block)] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return points


def store(con, points: np.ndarray) -> None:
    """Candidates in one domain and their embeddings, appended in Arrow blocks."""
    n, dim = points.shape
    ids = np.char.add("c", np.char.zfill(np.arange(n).astype(str), 9))
    con.append("candidates", pd.DataFrame({
        "candidate_id": ids, "domain": "bench", "instruction": "q", "input": "", "response": "a",
        "dedup_key": ids, "source_id": "bench", "source_row": np.arange(1, n + 1), "ingest_run_id": "bench",
    }), by_name=True)
    for start in range(0, n, 100_000):
        block = points[start:start + 100_000]
        flat = pa.array(block.reshape(-1), type=pa.float32())
        offsets = pa.array(np.arange(0, block.size + 1, dim, dtype=np.int32))
        con.append("embeddings", pa.table({
            "candidate_id": ids[start:start + len(block)],
            "encoder_fingerprint": ["bench-encoder"] * len(block),
            "config_hash": ["bench-config"] * len(block),
            "embedding": pa.ListArray.from_arrays(offsets, flat),
            "run_id": ["bench"] * len(block),
        }).to_pandas(), by_name=True)


def select_from(path: Path, n_points: int, n_centers: int, memory_limit: str | None) -> None:
    """Load the stored embeddings and select, as `capsel select --method kcenter` does."""
    con = open_db(path, read_only=True, memory_limit=memory_limit)
    key = ScoringKey("bench-encoder", "bench-config", method="kcenter")
    started = time.perf_counter()
    members = select_coverage(con, [Quota("bench", n_points, n_centers, n_centers)], key)
    elapsed = time.perf_counter() - started
    con.close()
    print(f"select_coverage (load from DuckDB + greedy): {elapsed:.1f} s for {len(members)} centers; "
          f"peak RSS of this select process: {peak_rss_gib():.2f} GiB "
          f"(DuckDB memory_limit {memory_limit or 'default'})")


def main() -> None:
    """Generate the points, run the greedy selection and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--points", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--centers", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--through-db", action="store_true", help="store in DuckDB and select with select_coverage")
    parser.add_argument("--duckdb-memory", default=None, help="DuckDB memory_limit of the selecting connection")
    parser.add_argument("--select-db", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.select_db:
        select_from(args.select_db, args.points, args.centers, args.duckdb_memory)
        return
    started = time.perf_counter()
    points = random_unit_points(args.points, args.dim, args.seed)
    print(f"points: {args.points:,} x {args.dim} float32 = {points.nbytes / 2**30:.2f} GiB "
          f"(generated in {time.perf_counter() - started:.1f} s)")
    if args.through_db:
        with tempfile.TemporaryDirectory() as scratch:
            path = Path(scratch) / "bench.duckdb"
            con = open_db(path, memory_limit="4GB")
            started = time.perf_counter()
            store(con, points)
            con.close()
            print(f"stored in DuckDB in {time.perf_counter() - started:.1f} s "
                  f"(peak RSS of storing: {peak_rss_gib():.2f} GiB)")
            del points
            # a fresh process, so its peak RSS is that of `capsel select --method kcenter` alone
            command = [sys.executable, __file__, "--select-db", str(path), "--points", str(args.points),
                       "--centers", str(args.centers)]
            for limit in (None, args.duckdb_memory) if args.duckdb_memory else (None,):
                subprocess.run([*command, *(["--duckdb-memory", limit] if limit else [])], check=True)
        return
    started = time.perf_counter()
    centers = greedy_k_center(points, args.centers)
    elapsed = time.perf_counter() - started
    print(f"greedy k-center: {elapsed:.1f} s for {len(centers.order)} centers, "
          f"{1000 * elapsed / len(centers.order):.1f} ms per center, covering radius {centers.radius:.4f}")
    print(f"peak RSS: {peak_rss_gib():.2f} GiB")


if __name__ == "__main__":
    main()
