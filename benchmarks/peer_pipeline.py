"""The paper-style pipeline a user would otherwise run, beside capsel's engine: same device, model and pool.

Paper-style (benchmarks/paper_style.py): ŷ by vLLM where this Python has it and the device is CUDA (the model's
weights saved first, so vLLM decodes with the very weights HF scores with), else by HF `generate`; then two full
forwards per batch, [x;y] and [x;ŷ], with output_hidden_states=True and full-vocabulary logits. Its batch is tuned
here: each of --paper-batch-sizes is timed on a warm-up slice and the fastest that fits runs the pool. Engine:
`ScoringEngine.generate_and_score`, the fused route `capsel score` takes, its batch sized from free memory. Both
run over the same candidates without DuckDB (gpu_throughput.py times the engine end to end, writes included).

    python benchmarks/peer_pipeline.py --tiny                          # CPU, a tiny Llama, seconds
    python benchmarks/peer_pipeline.py --n-candidates 1024 --save      # GPU: Llama-3-8B shape, bf16, random weights

Prints one JSON object: candidates/s of each, their ratio, which ŷ the peer used, the batch sizes tried, and how
far the two agree: the Spearman correlation of the CAP z each gives (the residual of D_late on D_early over the
pool), and the largest |Δ D_ℓ| over layers 1..L-1 of rows whose ŷ came out the same (HF's last hidden state is
taken after the final norm, the engine's before it).
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import orjson
import torch

sys.path.append(str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from paper_style import full_forwards, hf_generate  # noqa: E402
from saved_results import RESULTS, save  # noqa: E402
from synthetic_llama import PoolShape, add_engine_flags, engine_model, model_info, pool_texts, synthetic_pool  # noqa: E402

from capsel.cap_engine.batch_memory import resolve_batch_size  # noqa: E402
from capsel.cap_engine.compiled_norms import compiles  # noqa: E402
from capsel.cap_engine.config import ScoringConfig, layer_split  # noqa: E402
from capsel.cap_engine.engine import ScoringEngine  # noqa: E402
from capsel.cap_engine.vllm_generation import vllm_build  # noqa: E402
from capsel.models.loading import attention_implementation  # noqa: E402
from capsel.versioning import code_version  # noqa: E402


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="tiny Llama on CPU, HF generate for the peer (seconds)")
    parser.add_argument("--n-candidates", type=int, default=None, help="pool size (default 1024, tiny 32)")
    parser.add_argument("--paper-batch-sizes", default=None,
                        help="the peer's batch sizes to try, e.g. '8 16 32 64' (default: that on CUDA, '4 8' on CPU)")
    parser.add_argument("--paper-yhat", choices=["auto", "vllm", "hf"], default="auto",
                        help="the peer's ŷ: vllm where this Python has it on CUDA (auto), or HF generate")
    parser.add_argument("--batch-size", default="auto", help="the engine's batch size, or auto (from free memory)")
    parser.add_argument("--attn", default="auto", help="HF attention: auto, sdpa, flash_attention_2, eager")
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.4,
                        help="vLLM's share of the GPU (the HF model stays loaded beside it)")
    add_engine_flags(parser)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--save", action="store_true", help="also write benchmarks/results/peer-<device>-<date>.json")
    parser.add_argument("--results-dir", type=Path, default=RESULTS, help="where --save writes")
    return parser.parse_args()


def timed(function, *args):
    sync()
    start = time.perf_counter()
    result = function(*args)
    sync()
    return result, round(time.perf_counter() - start, 3)


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def tuned_batch(sizes: list[int], run, warm) -> tuple[int, dict[str, float | str]]:
    """The fastest batch size per candidate on the warm-up slice; one that runs out of memory is skipped."""
    tried: dict[str, float | str] = {}
    for size in sizes:
        try:
            run(warm[:size], size)  # one batch pays for the first allocations of its shape, outside the timing
            _, seconds = timed(run, warm, size)
            tried[str(size)] = round(seconds / len(warm), 5)
        except torch.OutOfMemoryError:
            tried[str(size)] = "out of memory"
            torch.cuda.empty_cache()
    fitting = {int(size): s for size, s in tried.items() if isinstance(s, float)}
    if not fitting:
        raise SystemExit(f"no paper-style batch size fits: {tried}")
    return min(fitting, key=lambda size: fitting[size]), tried


def vllm_yhat(loaded, info, config: ScoringConfig, args, inputs) -> tuple[dict[str, list[int]], dict]:
    """ŷ by vLLM over the HF model's own weights (saved to the model folder first): ids, and start-up seconds."""
    from capsel.cap_engine.vllm_generation import VLLMGenerator, VLLMOptions

    startup = {}
    _, startup["weights_save_s"] = timed(loaded.model.save_pretrained, info.source.local_dir)
    generator, startup["vllm_start_s"] = timed(VLLMGenerator, info, config,
                                               VLLMOptions(gpu_memory_utilization=args.gpu_memory_utilization))
    try:
        ids, seconds = timed(generator.generate, [item.prompt_ids for item in inputs])
    finally:
        _, startup["vllm_stop_s"] = timed(generator.close)
    return {item.candidate_id: hat for item, hat in zip(inputs, ids)}, {"yhat_s": seconds, "startup": startup}


def cap_z(d_early: np.ndarray, d_late: np.ndarray) -> np.ndarray:
    """The residual of D_late on D_early over the pool (OLS), as z (sample std): the paper's score, one domain."""
    beta, alpha = np.polyfit(d_early, d_late, 1)
    residual = d_late - (alpha + beta * d_early)
    return (residual - residual.mean()) / residual.std(ddof=1)


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    ranks = lambda x: np.argsort(np.argsort(x))  # noqa: E731 (the synthetic scores have no ties)
    return float(np.corrcoef(ranks(a), ranks(b))[0, 1])


def agreement(engine_results, paper: dict[str, list[float]], generated: dict[str, list[int]], n_layers: int) -> dict:
    """How far the two pipelines' scores agree over the candidates both scored."""
    early, _ = layer_split(n_layers, 0.33, 0.66)
    both = [r for r in engine_results if r.divergence.excluded_reason is None and r.candidate_id in paper]
    engine_early = np.array([r.divergence.d_early for r in both])
    engine_late = np.array([r.divergence.d_late for r in both])
    paper_early = np.array([np.mean([paper[r.candidate_id][layer - 1] for layer in early]) for r in both])
    paper_late = np.array([paper[r.candidate_id][n_layers] for r in both])
    same = [r for r in both if r.generation.generated_ids == generated[r.candidate_id]]
    gaps = [abs(x - y) for r in same
            for x, y in zip(r.divergence.layer_divergence[:n_layers - 1], paper[r.candidate_id][:n_layers - 1])]
    return {
        "candidates_both_scored": len(both), "rows_with_other_yhat": len(both) - len(same),
        "spearman_cap_z": round(spearman(cap_z(engine_early, engine_late), cap_z(paper_early, paper_late)), 5),
        "max_abs_layer_divergence_diff_same_yhat": max(gaps) if gaps else None,
    }


def main() -> None:
    args = parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = "cpu" if args.tiny else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA GPU is visible; the 8B-shaped peer needs one (run --tiny on CPU)")
    dtype = "bfloat16" if device == "cuda" else "float32"
    n = args.n_candidates or (32 if args.tiny else 1024)
    sizes = [int(s) for s in (args.paper_batch_sizes or ("4 8" if args.tiny else "8 16 32 64")).split()]
    config = ScoringConfig(prompt_format="raw")  # the paper's protocol; the synthetic tokenizer has no template
    device_name = torch.cuda.get_device_name(0) if device == "cuda" else f"cpu-{platform.machine()}"
    report: dict = {"device": {"name": device_name, "torch": torch.__version__, "code_version": code_version()},
                    "command": " ".join(["python", *sys.argv])}
    with tempfile.TemporaryDirectory() as root:
        info = model_info(Path(root) / "model", args.tiny, dtype, device)
        pool = synthetic_pool(Path(root) / "pool.jsonl", n, len(info.tokenizer), PoolShape())
        loaded, model_init_s = timed(engine_model, info, attention_implementation(info, args.attn), args)
        engine = ScoringEngine(loaded, config, resolve_batch_size(args.batch_size, loaded, config))
        inputs = [item for item in engine.prepare(pool_texts(pool, n)) if item.excluded_reason is None]
        warm = inputs[: max(16, max(sizes))]
        # compiling (where the engine compiles) and first allocations are start-up, outside the timed pool
        _, engine_warm_s = timed(engine.generate_and_score, warm)
        scored, engine_s = timed(engine.generate_and_score, inputs)

        use_vllm = args.paper_yhat == "vllm" or (args.paper_yhat == "auto" and device == "cuda"
                                                 and vllm_build() == "cuda")
        if use_vllm:
            # the forwards alone are tuned, over ŷ of the warm-up slice made once
            warm_hats = hf_generate(loaded, warm, config.horizon, max(sizes))
            batch, tried = tuned_batch(sizes, lambda items, size: full_forwards(loaded, items, warm_hats, size), warm)
            generated, vllm = vllm_yhat(loaded, info, config, args, inputs)
            paper, forwards_s = timed(full_forwards, loaded, inputs, generated, batch)
            paper_s, peer = vllm["yhat_s"] + forwards_s, {"yhat": "vllm", "yhat_s": vllm["yhat_s"],
                                                          "forwards_s": forwards_s, "startup": vllm["startup"]}
        else:
            def paper_run(items, size):
                hats, yhat_s = timed(hf_generate, loaded, items, config.horizon, size)
                profiles, forwards_s = timed(full_forwards, loaded, items, hats, size)
                return hats, profiles, yhat_s, forwards_s

            batch, tried = tuned_batch(sizes, paper_run, warm)
            (generated, paper, yhat_s, forwards_s), paper_s = timed(paper_run, inputs, batch)
            peer = {"yhat": "hf generate", "yhat_s": yhat_s, "forwards_s": forwards_s}

    report.update({
        "model": {"name": info.source.name_or_path, "layers": info.n_layers, "dtype": dtype, "device": device,
                  "parameters": sum(p.numel() for p in loaded.model.parameters()), "init_s": model_init_s},
        "pool": {"candidates": len(inputs), "mean_prompt_tokens": float(np.mean([len(i.prompt_ids) for i in inputs])),
                 "mean_response_tokens": float(np.mean([len(i.response_ids) for i in inputs])),
                 "mean_generated_tokens": float(np.mean([len(g) for g in generated.values()]))},
        "engine": {"batch_size": engine.batch_size, "compiled": compiles(loaded), "warm_up_s": engine_warm_s,
                   "seconds": engine_s, "candidates_per_s": round(len(inputs) / engine_s, 2)},
        "paper_style": {**peer, "batch_size": batch, "seconds_per_candidate_tried": tried, "seconds": paper_s,
                        "candidates_per_s": round(len(inputs) / paper_s, 2)},
        "ratio_engine_over_paper": round(paper_s / engine_s, 2),
        "agreement": agreement(scored, paper, generated, info.n_layers),
    })
    if device == "cuda":
        report["peak_memory_allocated_bytes"] = torch.cuda.max_memory_allocated()
    text = orjson.dumps(report, option=orjson.OPT_INDENT_2).decode()
    print(text)
    if args.save:
        print(f"saved {save(text, device_name, args.results_dir, 'peer-')}", file=sys.stderr)


if __name__ == "__main__":
    main()
