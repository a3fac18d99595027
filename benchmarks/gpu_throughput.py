"""End-to-end CAP throughput on one device: generate -> score -> write to DuckDB, reported as JSON.

On a GPU machine (Llama-3-8B shape with random weights; vLLM generates in a worker process,
then HF scores in bf16 on the same GPU; nothing is downloaded):

    pip install torch==<the version vLLM wants> && pip install -e '.[gpu]'
    python benchmarks/gpu_throughput.py --n-candidates 8192 --save

On CPU, in seconds (a tiny Llama, the HF generator instead of vLLM; the test suite runs this):

    python benchmarks/gpu_throughput.py --tiny
    python benchmarks/gpu_throughput.py --tiny --device cuda --enforce-eager   # the GPU route, tiny model

The pool goes through the real `ingest` and `run_scorer` (y-hat, then CAP) with the CAP scorer (DuckDB writes
included). The JSON has candidates/s end to end, the split between generation, scoring and
writing, achieved FLOP/s against the device's peak, GPU utilisation and peak GPU memory.
`--save` also writes it to benchmarks/results/<device>-<date>.json.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

import orjson
import torch

# an installed capsel comes first (sql/ is capsel.sql only once built); the checkout is the fallback
sys.path.append(str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpu_monitor import GpuMonitor  # noqa: E402
from saved_results import RESULTS, save  # noqa: E402
from synthetic_llama import (  # noqa: E402
    MAX_LENGTHS,
    PoolShape,
    add_engine_flags,
    engine_model,
    model_info,
    pool_texts,
    synthetic_pool,
)

from capsel.cap_engine.batch_memory import resolve_batch_size  # noqa: E402
from capsel.cap_engine.compiled_norms import compiles  # noqa: E402
from capsel.cap_engine.config import ScoringConfig  # noqa: E402
from capsel.cap_engine.engine import ScoringEngine  # noqa: E402
from capsel.cap_engine.forward import kv_layout  # noqa: E402
from capsel.cap_engine.generation import HFGenerator  # noqa: E402
from capsel.cap_engine.graph_steps import kept_steps  # noqa: E402
from capsel.db import open_db  # noqa: E402
from capsel.db.records import fetch_records  # noqa: E402
from capsel.ingest.pipeline import IngestOptions, ingest  # noqa: E402
from capsel.methods.cap.scorer import CapScorer
from capsel.methods.cap.yhat import YhatScorer
from capsel.models.loading import attention_implementation
from capsel.runner.job import PAGE_SIZE, default_page_size, run_scorer
from capsel.runner.progress import RunSummary
from capsel.versioning import code_version  # noqa: E402

# Dense bf16 tensor-core peaks (no sparsity), FLOP/s; the first name found in the device name wins.
PEAK_FLOPS = {"H100 PCIe": 756e12, "H100 NVL": 835e12, "H100": 989e12, "H200": 989e12, "A100": 312e12,
              "L40S": 362e12}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="tiny Llama on CPU with the HF generator (seconds)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default=None,
                        help="default: cpu with --tiny, else cuda (--tiny --device cuda smoke-tests the GPU route)")
    parser.add_argument("--n-candidates", type=int, default=None, help="pool size (default 8192, tiny 32)")
    parser.add_argument("--generator", choices=["vllm", "hf", "fused"], default=None,
                        help="vllm (default on CUDA), hf (default on CPU), or fused: HF decodes y-hat "
                             "while keeping its states, so the prompt runs once for everything")
    parser.add_argument("--lengths", choices=["realistic", "max"], default="realistic",
                        help="realistic: log-uniform spread with a tail past P and R; max: every item at P and R")
    parser.add_argument("--batch-size", default="auto", help="HF scoring batch size, or auto (from free memory)")
    parser.add_argument("--attn", default="auto", help="HF attention: auto, sdpa, flash_attention_2, eager")
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.85, help="vLLM's share of the GPU")
    parser.add_argument("--max-num-seqs", type=int, default=None, help="vLLM's concurrent sequences")
    parser.add_argument("--enforce-eager", action="store_true", help="vLLM without CUDA graphs")
    parser.add_argument("--profile", action="store_true", help="add a torch.profiler table of two scoring batches")
    add_engine_flags(parser)
    parser.add_argument("--shard-size", type=int, default=None,
                        help="candidates per page, sorted by length before they are cut into batches (default: the "
                             "runner's, 16 batches and at least 1024)")
    parser.add_argument("--peak-tflops", type=float, default=None,
                        help="dense bf16 peak for MFU when the device is not in PEAK_FLOPS")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--save", action="store_true", help="also write benchmarks/results/<device>-<date>.json")
    parser.add_argument("--results-dir", type=Path, default=RESULTS, help="where --save writes")
    return parser.parse_args()


def timed(function, *args):
    start = time.perf_counter()
    result = function(*args)
    return result, round(time.perf_counter() - start, 3)


def phase(summary: RunSummary) -> dict:
    """One phase's wall time split into model calls, DB writes and the rest (reads, tokenising)."""
    return {
        "n_processed": summary.n_processed, "n_done": summary.n_done, "excluded": dict(summary.excluded),
        "wall_s": round(summary.wall_s, 3), "model_s": round(summary.model_s, 3),
        "write_s": round(summary.write_s, 3),
        "other_s": round(summary.wall_s - summary.model_s - summary.write_s, 3),
        "candidates_per_s": round(summary.rate, 2),
    }


def end_to_end(phases: dict, startup: dict, n: int) -> dict:
    """Candidates/s over generation + scoring + writing, and where the time went (fractions of the run)."""
    run_s = sum(p["wall_s"] for p in phases.values())
    writing = sum(p["write_s"] for p in phases.values())
    split = {name: round(p["model_s"] / run_s, 3) for name, p in phases.items()}
    split["writing"] = round(writing / run_s, 3)
    split["other"] = round(1 - sum(split.values()), 3)
    startup_s = round(sum(startup.values()), 3)
    return {
        "end_to_end": {"candidates": n, "wall_s": round(run_s, 3), "candidates_per_s": round(n / run_s, 2),
                       "startup_s": startup_s,
                       "candidates_per_s_with_startup": round(n / (run_s + startup_s), 2)},
        "split": split, "startup": startup,
    }


def model_facts(loaded, info) -> dict:
    """What was measured: the architecture's size and how it ran."""
    config = loaded.model.config
    return {"name": info.source.name_or_path, "parameters": sum(p.numel() for p in loaded.model.parameters()),
            "layers": config.num_hidden_layers, "hidden": config.hidden_size, "vocab": config.vocab_size,
            "dtype": info.dtype, "device": info.device}


def make_generator(kind: str, info, config: ScoringConfig, args, loaded):
    """vLLM in a worker process with dummy weights, or the HF generator on the already built model."""
    if kind == "vllm":
        from capsel.cap_engine.vllm_generation import VLLMGenerator, VLLMOptions

        return VLLMGenerator(info, config, VLLMOptions(
            gpu_memory_utilization=args.gpu_memory_utilization, enforce_eager=args.enforce_eager,
            load_format="dummy", max_num_seqs=args.max_num_seqs,
        ))
    return HFGenerator(loaded, config.horizon, resolve_batch_size(args.batch_size, loaded, config))


def flops(loaded, tokens: dict, phases: dict, peak: float | None, config: ScoringConfig) -> dict:
    """2 x non-embedding parameters per token forward, achieved per phase, and the issue's per-candidate bound."""
    embedding = loaded.model.get_input_embeddings().weight.numel()
    per_token = 2 * (sum(p.numel() for p in loaded.model.parameters()) - embedding)
    worked = {
        "generation": tokens["prompt_tokens"] + tokens["generated_tokens"],
        "scoring": tokens["prompt_tokens"] + tokens["aligned_tokens"] + tokens["response_tokens"],
    }
    if "generation" not in phases:  # fused: one prefill, y-hat decoded with its states kept, then y
        worked = {"scoring": tokens["prompt_tokens"] + tokens["generated_tokens"] + tokens["response_tokens"]}
    P, R = config.prompt_tokens, config.horizon
    report = {"flop_per_token_forward": per_token, "peak_flops": peak, "phases": {}}
    for name, n_tokens in worked.items():
        achieved = per_token * n_tokens / phases[name]["model_s"] if phases[name]["model_s"] else None
        report["phases"][name] = {"token_forwards": n_tokens, "achieved_flops": achieved,
                                  "mfu": round(achieved / peak, 3) if peak and achieved else None}
    n = max(tokens["n_scored"], 1)
    report["flop_per_candidate_this_pool"] = per_token * sum(worked.values()) / n
    # The worst case: P-token prompt, R-token y and y-hat; fused shares the prompt across everything.
    report["flop_per_candidate_max_fused"] = per_token * (P + 2 * R)
    report["flop_per_candidate_max_vllm_route"] = per_token * ((P + R) + (P + 2 * R))
    if peak:
        for key in ("this_pool", "max_fused", "max_vllm_route"):
            report[f"candidates_per_s_bound_{key}"] = round(peak / report[f"flop_per_candidate_{key}"], 1)
    return report


def peak_flops(args, device_name: str) -> float | None:
    """The device's dense bf16 peak: --peak-tflops, else looked up by name (None on CPU and unknown GPUs)."""
    if args.peak_tflops:
        return args.peak_tflops * 1e12
    return next((value for name, value in PEAK_FLOPS.items() if name in device_name), None)


def profile_scoring(engine: ScoringEngine, inputs) -> list[dict]:
    """Top operators by device time (CPU time on CPU) while scoring two batches of stored generations."""
    from torch.profiler import ProfilerActivity, profile

    generations = engine.generate(inputs)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    with profile(activities=activities) as prof:
        engine.score(generations)
    device_key = "self_device_time_total" if torch.cuda.is_available() else "self_cpu_time_total"
    events = sorted(prof.key_averages(), key=lambda e: getattr(e, device_key, 0), reverse=True)[:20]
    return [{"op": e.key, "calls": e.count, "self_ms": round(getattr(e, device_key, 0) / 1000, 2),
             "cpu_total_ms": round(e.cpu_time_total / 1000, 2)} for e in events]


def main() -> None:
    args = parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = args.device or ("cpu" if args.tiny else "cuda")
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA GPU is visible; the full benchmark needs one (run --tiny on CPU)")
    if device == "cpu" and not args.tiny:
        raise SystemExit("an 8B model on CPU would take hours; use --tiny")
    dtype = "bfloat16" if device == "cuda" else "float32"
    generator = args.generator or ("vllm" if device == "cuda" else "hf")
    n = args.n_candidates or (32 if args.tiny else 8192)
    config = ScoringConfig(prompt_format="raw")  # the paper's protocol; the synthetic tokenizer has no template
    device_name = torch.cuda.get_device_name(0) if device == "cuda" else f"cpu-{platform.machine()}"
    report: dict = {"device": {"name": device_name, "torch": torch.__version__, "code_version": code_version()},
                    "command": " ".join(["python", *sys.argv]), "generator": generator, "lengths": args.lengths}
    with tempfile.TemporaryDirectory() as root, GpuMonitor() as monitor:
        info = model_info(Path(root) / "model", args.tiny, dtype, device)
        con = open_db(Path(root) / "bench.duckdb")
        pool = synthetic_pool(Path(root) / "pool.jsonl", n, len(info.tokenizer),
                              MAX_LENGTHS if args.lengths == "max" else PoolShape())
        ingest(con, [pool], IngestOptions(domain="bench"))
        attn = attention_implementation(info, args.attn)
        phases, startup, loaded = {}, {}, None
        if generator != "vllm":
            loaded, startup["hf_model_init_s"] = timed(engine_model, info, attn, args)
        if generator != "fused":
            with monitor.phase("generation"):
                backend, startup["generator_start_s"] = timed(make_generator, generator, info, config, args, loaded)
                phases["generation"] = phase(run_scorer(con, YhatScorer(CapScorer(info, config), backend),
                                                              page_size=max(PAGE_SIZE, backend.batch_size)))
                if hasattr(backend, "close"):
                    _, startup["generator_stop_s"] = timed(backend.close)
        with monitor.phase("scoring"):
            if loaded is None:
                loaded, startup["hf_model_init_s"] = timed(engine_model, info, attn, args)
            engine = ScoringEngine(loaded, config, resolve_batch_size(args.batch_size, loaded, config))
            if compiles(loaded):
                # Compiling is start-up, like loading the weights: a small batch outside the timed run pays it (the
                # graphs take any batch width and length).
                _, startup["compile_s"] = timed(engine.generate_and_score, engine.prepare(pool_texts(pool, 16)))
            scorer = CapScorer.of(engine)
            page_size = args.shard_size or default_page_size(scorer, dispatched=False)
            phases["scoring"] = phase(run_scorer(con, scorer, page_size=page_size))
        phases["scoring"].update(batch_size=engine.batch_size, attn_implementation=attn, kv_layout=kv_layout(loaded),
                                 graph_captures=kept_steps(loaded.model).captures, prefill_groups=args.prefill_groups,
                                 compile_norms_and_mlps="on" if compiles(loaded) else "off", shard_size=page_size)
        tokens = fetch_records(con, "scoring/scoring_token_counts", {
            "model_fingerprint": info.fingerprint, "generation_hash": config.generation_hash,
            "scoring_hash": config.scoring_hash, "horizon": config.horizon})[0]
        con.close()
        report.update(end_to_end(phases, startup, n), phases=phases, tokens=tokens, model=model_facts(loaded, info),
                      flops=flops(loaded, tokens, phases, peak_flops(args, device_name), config))
        if device == "cuda":
            report["hf_peak_memory_allocated_bytes"] = torch.cuda.max_memory_allocated()
        if args.profile:
            report["profile_scoring_two_batches"] = profile_scoring(engine, engine.prepare(
                pool_texts(pool, 2 * engine.batch_size)))
    report["gpu"] = monitor.summary() if device == "cuda" else {"source": None, "reason": "CPU run"}
    text = orjson.dumps(report, option=orjson.OPT_INDENT_2).decode()
    print(text)
    if args.save:
        # Each option set away from its default names the file.
        prefix = "".join(name for name, changed in (
            (f"kv-{args.kv_layout}-", args.kv_layout != "auto"),
            (f"groups-{args.prefill_groups}-", args.prefill_groups != "auto"),
            (f"compiled-{args.compile_norms_and_mlps}-", args.compile_norms_and_mlps != "auto"),
            (f"shard{args.shard_size}-", args.shard_size is not None),
            (f"b{args.batch_size}-", args.batch_size != "auto")) if changed)
        print(f"saved {save(text, device_name, args.results_dir, prefix)}", file=sys.stderr)


if __name__ == "__main__":
    main()
