"""Where one fused scoring batch spends its time: prefill, ŷ's greedy steps, the y branch, and the top operators.

Runs the engine that is on the path (so an earlier tree's build can be measured by putting it first on
PYTHONPATH) on the Llama-3-8B shape, bf16, `--batches` batches of `--batch-size` realistic candidates:

    python benchmarks/decode_profile.py --out decode_profile.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic_llama import (  # noqa: E402
    PoolShape,
    add_engine_flags,
    engine_model,
    model_info,
    pool_texts,
    synthetic_pool,
)


def synced() -> float:
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter()


def timed_phases(branches, decoding, graph_steps, timings: dict) -> None:
    """Wrap the engine's prefill, step feed and y branch so each call's synced wall time adds to `timings`."""
    def wrap(module, name, key):
        original = getattr(module, name)

        def timed(*args, **kwargs):
            start = synced()
            result = original(*args, **kwargs)
            timings[key] = timings.get(key, 0.0) + synced() - start
            timings[key + "_calls"] = timings.get(key + "_calls", 0) + 1
            return result
        setattr(module, name, timed)

    wrap(branches, "prefill", "prefill_s")
    wrap(branches, "_against_reference", "y_branch_s")
    wrap(decoding, "extend", "step_forward_s")
    wrap(graph_steps.StepGraph, "feed", "step_forward_s")


def sdpa_micro(batch: int, kv: int, capacity: int) -> dict:
    """One SDPA decode step on contiguous K/V and on a view of a larger buffer (as the pooled buffers give it):
    GQA repeated to 32 heads (transformers before pack_gqa, with a mask) and packed, 4 query heads per KV head
    (transformers 5.24's `pack_gqa` for a one-token step)."""
    repeated_q = torch.randn(batch, 32, 1, 128, device="cuda", dtype=torch.bfloat16)
    packed_q = repeated_q.reshape(batch, 8, 4, 128)
    full = torch.randn(batch, 8, capacity, 128, device="cuda", dtype=torch.bfloat16)
    mask = torch.ones(batch, 1, 1, kv, device="cuda", dtype=torch.bool)
    out = {}
    for name, k in (("contiguous", full[:, :, :kv].contiguous()), ("view", full[:, :, :kv])):
        def repeated(k=k):
            key = k[:, :, None].expand(batch, 8, 4, kv, 128).reshape(batch, 32, kv, 128)
            return torch.nn.functional.scaled_dot_product_attention(repeated_q, key, key, attn_mask=mask)

        def packed(k=k):
            return torch.nn.functional.scaled_dot_product_attention(packed_q, k, k, attn_mask=mask)

        for kind, step in (("", repeated), ("packed_", packed)):
            for _ in range(3):
                step()
            start = synced()
            for _ in range(20):
                step()
            out[f"{kind}{name}_ms"] = round((synced() - start) / 20 * 1000, 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--batches", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True)
    add_engine_flags(parser)
    parser.add_argument("--tiny", action="store_true", help="the tiny Llama on CPU: checks the script, in seconds")
    args = parser.parse_args()

    from capsel.cap_engine import branches, compiled_norms, decoding, forward, graph_steps
    from capsel.cap_engine.config import ScoringConfig
    from capsel.cap_engine.engine import ScoringEngine

    cuda = not args.tiny
    report: dict = {"engine": branches.__file__, "device": torch.cuda.get_device_name(0) if cuda else "cpu"}
    with tempfile.TemporaryDirectory() as root:
        info = model_info(Path(root) / "model", args.tiny, "bfloat16" if cuda else "float32", "cuda" if cuda else "cpu")
        loaded = engine_model(info, "sdpa", args)
        report["kv_layout"] = forward.kv_layout(loaded)
        report["compile_norms_and_mlps"] = compiled_norms.compiles(loaded)
        n = args.batch_size * args.batches
        pool = synthetic_pool(Path(root) / "pool.jsonl", n + 16, len(info.tokenizer), PoolShape())
        engine = ScoringEngine(loaded, ScoringConfig(prompt_format="raw"), args.batch_size)
        warm = engine.prepare(pool_texts(pool, n + 16)[n:])
        inputs = engine.prepare(pool_texts(pool, n))
        engine.generate_and_score(warm)

        start = synced()
        engine.generate_and_score(inputs)
        report["plain_s"] = round(synced() - start, 3)
        report["plain_candidates_per_s"] = round(n / report["plain_s"], 2)

        timings: dict = {}
        timed_phases(branches, decoding, graph_steps, timings)
        start = synced()
        engine.generate_and_score(inputs)
        timings["total_s"] = synced() - start
        report["synced_phases"] = {key: round(value, 3) for key, value in timings.items()}

        from torch.profiler import ProfilerActivity, profile
        one = inputs[: args.batch_size]
        with profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])) as prof:
            engine.generate_and_score(one)
        events = prof.key_averages()
        for key in ("self_device_time_total", "self_cpu_time_total"):
            top = sorted(events, key=lambda e: getattr(e, key, 0), reverse=True)[:25]
            report["top_by_" + key] = [
                {"op": e.key[:90], "calls": e.count, "self_ms": round(getattr(e, key, 0) / 1000, 2)} for e in top]
    if cuda:
        report["sdpa_decode_step"] = sdpa_micro(args.batch_size, 150, 200)
    args.out.write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v for k, v in report.items() if not k.startswith("top_by")}, indent=1))


if __name__ == "__main__":
    main()
