"""Engine vs the paper-style pipeline on one pool and one model, in one run (candidates/s and their ratio).

Paper-style: batched HF `generate` (batch 16, KV cache, greedy), then two batched full
forward passes over [x;y] and [x;y-hat] with output_hidden_states=True (full-vocabulary
logits over every position included). Engine: `ScoringEngine.generate_and_score`, the path
`capsel score` takes when y-hat is not stored yet (prompt prefilled once, y-hat's states
taken during its own decoding, y teacher-forced beside it on the shared cache).

    .venv/bin/python benchmarks/score_throughput.py --n-candidates 64 --repeats 3 [--threads 1]
    .venv/bin/python benchmarks/score_throughput.py --model gemma3-270m --n-candidates 64 --repeats 1 --batch-size 32 \
        --paper-batch-size 4
    .venv/bin/python benchmarks/score_throughput.py --model gemma3-270m --n-candidates 64 --repeats 2 --batch-size 32 \
        --threads 2 --engine-only
    .venv/bin/python benchmarks/score_throughput.py --model gemma3-270m --n-candidates 64 --repeats 3 --batch-size 32 \
        --threads 2 --engine-only --also-plain-head
    .venv/bin/python benchmarks/score_throughput.py --model gemma3-270m --n-candidates 64 --repeats 3 --batch-size 32 \
        --threads 2 --engine-only --also-exact-greedy-head

Prints one JSON object: seconds per round for each pipeline (rounds rotate the order, since
this machine is shared), best and median candidates/s, and their ratios. By default the model is a
random-initialised ~10M-parameter 12-layer Llama and the tokenizer is built with `tokenizers`;
nothing is downloaded. `--model` takes an installed real model (`capsel models install NAME`) or a
folder and scores the first clean rows of the bundled real pool (GSM8K and HumanEval, alternating) in
the model's prompt format (`--prompt-format`, default auto). The JSON also has the float32 FLOPs one
candidate costs the engine (decoder blocks at 2 x their parameters per token, plus the LM head where
logits are taken: the last prompt position, each greedy step and every response position) and the
rate this machine's measured matmul throughput would allow at that cost.
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import random
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import orjson
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from paper_style import paper_style  # noqa: E402
from run_agreement import agreement, results_digest  # noqa: E402

from capsel.cap_engine.config import ScoringConfig  # noqa: E402
from capsel.cap_engine.engine import ScoringEngine  # noqa: E402
from capsel.cap_engine.forward import kv_layout  # noqa: E402
from capsel.cap_engine.greedy_head import passes_logits_through, screening_counts, screens  # noqa: E402
from capsel.cap_engine.inputs import CandidateText  # noqa: E402
from capsel.cap_engine.sliced_head import head_shapes_checked  # noqa: E402
from capsel.cap_engine.vocabulary_slices import slices_head  # noqa: E402
from capsel.models.loading import KV_LAYOUTS, describe_model, load_model

N_WORDS = 4000


def build_model_dir(root: Path) -> Path:
    """A 12-layer Llama (d=256) with a BOS-adding word-level tokenizer, saved as a user's model folder."""
    import transformers as tf
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    specials = ["<pad>", "<unk>", "<s>", "</s>"]
    vocab = {token: index for index, token in enumerate(specials + [f"w{i}" for i in range(N_WORDS)])}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    backend.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 2)])
    tokenizer = tf.PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>",
        model_max_length=1 << 20,
    )
    config = tf.LlamaConfig(
        vocab_size=len(vocab), hidden_size=256, intermediate_size=704, num_hidden_layers=12,
        num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=512,
        bos_token_id=2, eos_token_id=3, pad_token_id=0,
    )
    torch.manual_seed(0)
    model = tf.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    path = root / "llama12"
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def synthetic_pool(n: int, seed: int = 0) -> list[CandidateText]:
    """~256-token prompts (255 words + BOS) and 60-word responses (>= 48 tokens)."""
    rng = random.Random(seed)
    words = lambda count: " ".join(f"w{rng.randrange(N_WORDS)}" for _ in range(count))  # noqa: E731
    return [
        CandidateText(f"c{i:05d}", words(rng.randint(240, 255)), "", words(60)) for i in range(n)
    ]


def real_pool(n: int) -> list[CandidateText]:
    """The first n clean rows of the bundled real pool, math and code alternating."""
    from capsel_lab.real_pool import real_pool_dir

    records = [orjson.loads(line) for line in (real_pool_dir() / "pool.jsonl").read_bytes().splitlines()]
    by_domain = {domain: [r for r in records if r["domain"] == domain and r["lab_label"] == "clean"]
                 for domain in ("math", "code")}
    mixed = [record for pair in zip(*by_domain.values()) for record in pair][:n]
    return [CandidateText(r["lab_id"], r["instruction"], r["input"], r["output"]) for r in mixed]


def engine_gflop(loaded, inputs, scored) -> float:
    """Mean float32 GFLOP per candidate of the engine's forwards (see the module docstring)."""
    model = loaded.model
    head = model.get_output_embeddings().weight
    body = sum(p.numel() for p in loaded.blocks.parameters())
    total = 0.0
    for item, result in zip(inputs, scored):
        generated = len(result.generation.generated_ids or [])
        tokens = len(item.prompt_ids) + generated + len(item.response_ids)
        head_positions = 1 + generated + len(item.response_ids)
        total += 2 * body * tokens + 2 * head.numel() * head_positions
    return total / len(inputs) / 1e9


def matmul_gflops(size: int = 2048, repeats: int = 5) -> float:
    """float32 GFLOP/s of one large square matmul with torch's current threads (best of `repeats`)."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    torch.mm(a, b)
    best = min(timed(torch.mm, a, b)[1] for _ in range(repeats))
    return 2 * size**3 / best / 1e9


def process_usage() -> dict:
    """CPU seconds in user code and in the kernel (page faults zeroing fresh memory land there), minor page faults
    and peak RSS of this process so far: model loading, warm-up and every round."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"user_s": round(usage.ru_utime, 1), "system_s": round(usage.ru_stime, 1),
            "minor_page_faults": usage.ru_minflt, "peak_rss_gib": round(usage.ru_maxrss / 2**20, 2)}


def timed(function, *args):
    start = time.perf_counter()
    result = function(*args)
    return result, time.perf_counter() - start


# The engine's other output heads a run can time beside it: the LoadedModel fields that make each.
HEADS = {"plain_head": {"sliced_head": False}, "exact_greedy_head": {"screened_greedy_head": False}}


def heads_compared(args: argparse.Namespace) -> list[str]:
    """The other heads asked for, by their report key."""
    return [name for name in HEADS if getattr(args, f"also_{name}")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-candidates", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--paper-batch-size", type=int, default=None,
                        help="batch of the paper-style pipeline (default: --batch-size); its full-vocabulary logits "
                             "over every position take batch x tokens x vocabulary x 4 bytes: Gemma 3 270M at 32 "
                             "needs over 24 GB, use 4")
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds; the pipelines alternate order")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--capsel-threads", action="store_true",
                        help="torch threads as capsel's commands choose them without --threads (the free cores)")
    parser.add_argument("--model", default=None, help="installed model name or folder (default: synthetic Llama)")
    parser.add_argument("--prompt-format", default="auto", help="raw | chat | auto (real models)")
    parser.add_argument("--engine-only", action="store_true",
                        help="time the fused engine alone (no paper-style pipeline, no ratio)")
    parser.add_argument("--also-kv-layout", choices=KV_LAYOUTS[1:], default=None,
                        help="also time the fused engine with this KV cache layout, in turn with the others")
    parser.add_argument("--also-plain-head", action="store_true",
                        help="also time the fused engine with the plain output head (no vocabulary slices), in turn "
                             "with the others")
    parser.add_argument("--also-exact-greedy-head", action="store_true",
                        help="also time the fused engine with the greedy steps' head exact in slices (not screened "
                             "from a bfloat16 estimate), in turn with the others")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    elif args.capsel_threads:
        from capsel.threads import use_torch_threads

        use_torch_threads(None)
    # the synthetic tokenizer has no template, so auto is the paper's raw protocol there
    config = ScoringConfig(prompt_format=args.prompt_format)
    with tempfile.TemporaryDirectory() as root:
        source = args.model or str(build_model_dir(Path(root)))
        info = describe_model(source, dtype="float32", device="cpu")
        loaded = load_model(info)
        engine = ScoringEngine(loaded, config, batch_size=args.batch_size)
        config = engine.config
        pool = real_pool(args.n_candidates) if args.model else synthetic_pool(args.n_candidates)
        inputs = engine.prepare(pool)
        warm = inputs[: args.batch_size]
        engine.generate_and_score(warm)
        paper_batch = args.paper_batch_size or args.batch_size
        if not args.engine_only:
            paper_style(loaded, warm, config.horizon, paper_batch)

        pipelines = {
            "engine_fused": lambda: engine.generate_and_score(inputs),
            "paper_style": lambda: paper_style(loaded, inputs, config.horizon, paper_batch),
            "engine_generate_then_score": lambda: engine.score(engine.generate(inputs)),
        }
        if args.engine_only:
            pipelines = {"engine_fused": pipelines["engine_fused"]}
        if args.also_kv_layout:
            other = ScoringEngine(replace(loaded, kv_layout=args.also_kv_layout), config, batch_size=args.batch_size)
            other.generate_and_score(warm)
            pipelines[f"engine_fused_kv_{args.also_kv_layout}"] = lambda: other.generate_and_score(inputs)
        for name in heads_compared(args):
            other_head = ScoringEngine(replace(loaded, **HEADS[name]), config, batch_size=args.batch_size)
            other_head.generate_and_score(warm)
            pipelines[f"engine_fused_{name}"] = functools.partial(other_head.generate_and_score, inputs)
        seconds: dict[str, list[float]] = {name: [] for name in pipelines}
        outputs = {}
        # The machine is shared: rotate the order each round so load swings hit every pipeline.
        names = list(pipelines)
        for round_index in range(args.repeats):
            turn = round_index % len(names)
            for name in names[turn:] + names[:turn]:
                outputs[name], elapsed = timed(pipelines[name])
                seconds[name].append(round(elapsed, 2))

    scored, paper = outputs["engine_fused"], outputs.get("paper_style", {})
    # Same numbers from both pipelines on layers 1..L-1 (HF's last hidden state is post-norm, the hook's is not).
    diffs = [
        abs(a - b)
        for item in scored if item.divergence.layer_divergence and item.divergence.candidate_id in paper
        for a, b in zip(item.divergence.layer_divergence[:-1], paper[item.divergence.candidate_id][:info.n_layers - 1])
    ]
    n = len(inputs)
    report = {
        "command": " ".join(["python", *sys.argv]),
        "machine": {"cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                    "load_average_1m_at_end": os.getloadavg()[0], "platform": platform.platform(),
                    "torch": torch.__version__,
                    # torch's huge pages for tensors of 2 MB and more, as the process started (unset: off)
                    "thp_mem_alloc_enable": os.environ.get("THP_MEM_ALLOC_ENABLE")},
        "process": process_usage(),
        "model": {"name": args.model or "synthetic llama12", "architecture": info.architecture,
                  "layers": info.n_layers, "parameters": sum(p.numel() for p in loaded.model.parameters()),
                  "prompt_format": config.prompt_format, "batch_size": args.batch_size,
                  "paper_batch_size": paper_batch},
        "pool": {"candidates": n, "mean_prompt_tokens": sum(len(i.prompt_ids) for i in inputs) / n,
                 "mean_response_tokens": sum(len(i.response_ids) for i in inputs) / n,
                 "mean_generated_tokens": sum(len(s.generation.generated_ids or []) for s in scored) / n},
    }
    for name, times in seconds.items():
        report[name] = {"seconds_per_round": times, "candidates_per_s_best": round(n / min(times), 3),
                        "candidates_per_s_median": round(n / statistics.median(times), 3)}
    if args.also_kv_layout:
        report["kv_layouts"] = {"default": kv_layout(loaded), "also": args.also_kv_layout,
                                **agreement(scored, outputs[f"engine_fused_kv_{args.also_kv_layout}"])}
    for name in heads_compared(args):
        other_scored = outputs[f"engine_fused_{name}"]
        report[name] = {
            **agreement(scored, other_scored),
            # every field of every result (ŷ ids, D_ℓ, PPL, exclusions) equal to the last bit
            "results_identical": all(a.generation.generated_ids == b.generation.generated_ids
                                     and a.divergence == b.divergence for a, b in zip(scored, other_scored)),
        }
    # each head shape the engine met (warm-up included) and whether its slices gave the plain head's bits
    report["sliced_head"] = {"used": slices_head(loaded), "shapes_checked": [
        {"rows": rows, "contiguous": contiguous, "threads": threads, "same_bits": same}
        for (rows, contiguous, threads), same in sorted(head_shapes_checked(loaded).items())]}
    # whether the greedy steps' head was screened (warm-up and every pipeline sharing the head included)
    report["greedy_head"] = {"screens": screens(loaded), "passes_logits_through": passes_logits_through(loaded),
                             **screening_counts(loaded)}
    if "paper_style" in seconds:
        report["ratio_engine_over_paper_best"] = round(min(seconds["paper_style"]) / min(seconds["engine_fused"]), 2)
        report["ratio_engine_over_paper_median"] = round(
            statistics.median(seconds["paper_style"]) / statistics.median(seconds["engine_fused"]), 2)
    report["max_abs_diff_layers_1_to_L_minus_1"] = max(diffs) if diffs else None
    report["engine_results_sha256"] = results_digest(scored)
    gflop, peak = engine_gflop(loaded, inputs, scored), matmul_gflops()
    report["engine_gflop_per_candidate"] = round(gflop, 2)
    report["matmul_gflops_measured"] = round(peak, 1)
    report["candidates_per_s_bound_at_matmul_peak"] = round(peak / gflop, 3)
    print(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())


if __name__ == "__main__":
    main()
