"""The engine on CPU with pooled, fresh (per batch) and no preallocated KV buffers, alternating, same candidates.

    .venv/bin/python benchmarks/kv_buffers_cpu.py --model gemma3-270m --n-candidates 32 --threads 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from score_throughput import real_pool  # noqa: E402

from capsel.cap_engine import kv_buffers  # noqa: E402
from capsel.cap_engine.config import ScoringConfig  # noqa: E402
from capsel.cap_engine.engine import ScoringEngine  # noqa: E402
from capsel.models.loading import describe_model, load_model  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="gemma3-270m")
    parser.add_argument("--n-candidates", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    engine = ScoringEngine(load_model(describe_model(args.model, dtype="float32", device="cpu")), ScoringConfig(),
                           batch_size=args.batch_size)
    inputs = engine.prepare(real_pool(args.n_candidates))
    pooled = kv_buffers.preallocate
    variants = {"pooled": pooled, "fresh": lambda cache, capacity, pool=None: pooled(cache, capacity, None),
                "dynamic": lambda cache, capacity, pool=None: cache}
    rates: dict[str, list[float]] = {name: [] for name in variants}
    engine.generate_and_score(inputs[: args.batch_size])  # warm-up: thread pools, allocator, first-call paths
    for round_index in range(args.rounds):
        order = list(variants) if round_index % 2 == 0 else list(reversed(variants))
        for name in order:
            kv_buffers.preallocate = variants[name]
            start = time.perf_counter()
            engine.generate_and_score(inputs)
            rates[name].append(round(args.n_candidates / (time.perf_counter() - start), 3))
    print(json.dumps({"model": args.model, "n_candidates": args.n_candidates, "batch_size": args.batch_size,
                      "threads": args.threads, "candidates_per_s": rates,
                      "median": {name: statistics.median(values) for name, values in rates.items()}}))


if __name__ == "__main__":
    main()
