"""CAP throughput on a vision-language model: one picture per candidate, generate + score, on one device.

On a GPU: a Llava-1.5-7B-shaped VLM with random weights (CLIP ViT-L/14 at 336 px, 576 image tokens per picture,
a Llama-2-7B text decoder), initialised directly on the device, nothing downloaded:

    python benchmarks/multimodal_throughput.py --n-candidates 256 --batch-size 32 --compare-batch 1

On CPU, in seconds (the tiny Llava of capsel_lab.tiny_vlm):

    python benchmarks/multimodal_throughput.py --tiny --n-candidates 64 --batch-size 16 --compare-batch 1

The engine stacks Llava's prompts (left-padded, pixels joined) `--batch-size` at a time; `--compare-batch B`
scores the same candidates again at batch B in the same process and reports both rates and the largest
divergence difference between the two runs. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import orjson
import torch
from PIL import Image

sys.path.append(str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from run_agreement import agreement  # noqa: E402
from saved_results import RESULTS, save  # noqa: E402

from capsel.cap_engine.config import ScoringConfig  # noqa: E402
from capsel.cap_engine.engine import ScoringEngine  # noqa: E402
from capsel.cap_engine.forward import kv_layout  # noqa: E402
from capsel.cap_engine.graph_steps import kept_steps  # noqa: E402
from capsel.cap_engine.inputs import CandidateText  # noqa: E402
from capsel.models.loading import KV_LAYOUTS, ModelInfo, describe_model, load_model, wrap_model  # noqa: E402
from capsel.models.source import ModelSource  # noqa: E402
from capsel_lab.tiny_vlm import CHAT_TEMPLATE, build_tiny_vlm, vlm_tokenizer  # noqa: E402

WORDS = "the of and to in is was for on that with as by at from this be are an it or which their".split()


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="the tiny random Llava on CPU (seconds)")
    parser.add_argument("--n-candidates", type=int, default=32)
    parser.add_argument("--device", default=None, help="default: cuda, or cpu with --tiny")
    parser.add_argument("--dtype", default=None, help="default: bfloat16 on cuda, float32 on cpu")
    parser.add_argument("--batch-size", type=int, default=16, help="candidates per batch (default 16)")
    parser.add_argument("--compare-batch", type=int, default=None,
                        help="also score at this batch size (e.g. 1) and report both rates")
    parser.add_argument("--kv-layout", choices=KV_LAYOUTS, default="auto",
                        help="the engine's KV cache (see gpu_throughput.py --kv-layout; graphed captures the greedy "
                             "step of Llava's text model as a CUDA graph)")
    parser.add_argument("--save", action="store_true",
                        help="also write benchmarks/results/multimodal_throughput-<device>-<date>.json")
    parser.add_argument("--results-dir", type=Path, default=RESULTS, help="where --save writes")
    return parser.parse_args()


def llava_7b_info(folder: Path, dtype: str, device: str):
    """Config of a Llava-1.5-7B-shaped VLM (saved in `folder`) and its description, as describe_model gives it."""
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig, LlavaProcessor
    from transformers.models.llava.image_processing_pil_llava import LlavaImageProcessorPil

    tokenizer = vlm_tokenizer(["<image>"])
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(hidden_size=1024, intermediate_size=4096, num_hidden_layers=24,
                                       num_attention_heads=16, image_size=336, patch_size=14, projection_dim=768),
        text_config=LlamaConfig(vocab_size=len(tokenizer), hidden_size=4096, intermediate_size=11008,
                                num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=32,
                                max_position_embeddings=4096, bos_token_id=tokenizer.bos_token_id,
                                eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id),
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"), vision_feature_layer=-2,
        vision_feature_select_strategy="default",
    )
    config.architectures = ["LlavaForConditionalGeneration"]
    processor = LlavaProcessor(
        image_processor=LlavaImageProcessorPil(size={"shortest_edge": 336}, crop_size={"height": 336, "width": 336}),
        tokenizer=tokenizer, patch_size=14, vision_feature_select_strategy="default", num_additional_image_tokens=1,
        chat_template=CHAT_TEMPLATE.replace("IMAGE_TEXT", "<image>"),
    )
    config.save_pretrained(folder)
    return config, ModelInfo(
        source=ModelSource("random-llava-1.5-7b", folder, None, {}, uses_safetensors=True), dtype=dtype,
        device=device, tokenizer=tokenizer, eos_token_ids=frozenset({tokenizer.eos_token_id}),
        architecture="LlavaForConditionalGeneration", n_layers=32, processor=processor,
    )


def candidates(folder: Path, n: int, size: int) -> list[CandidateText]:
    """n candidates, each a noise picture, a question of 40-120 words and a reference of 30-60 words."""
    rng, noise = random.Random(0), np.random.default_rng(0)
    rows = []
    for index in range(n):
        path = folder / f"picture-{index}.png"
        Image.fromarray(noise.integers(0, 256, (size, size, 3), dtype=np.uint8)).save(path)
        question = " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 120)))
        answer = " ".join(rng.choice(WORDS) for _ in range(rng.randint(30, 60)))
        rows.append(CandidateText(f"c{index:05d}", f"<image>\n{question}?", "", answer, (str(path),)))
    return rows


def main() -> None:
    args = parse_args()
    device = args.device or ("cpu" if args.tiny else "cuda")
    dtype = args.dtype or ("float32" if device == "cpu" else "bfloat16")
    with tempfile.TemporaryDirectory() as root:
        folder = Path(root)
        started = time.perf_counter()
        if args.tiny:
            info = describe_model(str(build_tiny_vlm(folder / "vlm", "llava")), dtype=dtype, device=device)
            loaded, picture = load_model(info), 28
        else:
            config, info = llava_7b_info(folder, dtype, device)
            from transformers import AutoModelForImageTextToText

            torch.manual_seed(0)
            with torch.device(device):
                model = AutoModelForImageTextToText.from_config(config, dtype=getattr(torch, dtype))
            loaded, picture = wrap_model(info, model), 336
        startup = time.perf_counter() - started
        loaded = replace(loaded, kv_layout=args.kv_layout)
        config = ScoringConfig(prompt_tokens=256, horizon=48, prompt_format="chat")
        engine = ScoringEngine(loaded, config, args.batch_size)
        texts = candidates(folder, args.n_candidates, picture)
        started = time.perf_counter()
        inputs = engine.prepare(texts)
        prepare_s = time.perf_counter() - started
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        scored, model_s = timed_scoring(engine, inputs, device)
        compared = None
        if args.compare_batch:
            again, again_s = timed_scoring(ScoringEngine(loaded, config, args.compare_batch), inputs, device)
            compared = {"batch_size": args.compare_batch, "model_s": round(again_s, 2),
                        "candidates_per_s": round(len(texts) / (prepare_s + again_s), 3),
                        **agreement(scored, again)}
    done = [s for s in scored if s.excluded_reason is None]
    report = {
        "model": "tiny llava" if args.tiny else "random Llava-1.5-7B shape", "device": _device_name(device),
        "dtype": dtype, "kv_layout": kv_layout(loaded), "graph_captures": kept_steps(loaded.model).captures,
        "batch_size": engine.batch_size, "n_candidates": len(texts), "n_scored": len(done),
        "excluded": sorted({s.excluded_reason for s in scored if s.excluded_reason}),
        "prompt_ids_mean": round(sum(len(i.prompt_ids) for i in inputs) / len(inputs), 1),
        "generated_ids_mean": round(sum(len(s.generation.generated_ids or []) for s in scored) / len(scored), 1),
        "startup_s": round(startup, 2), "prepare_s": round(prepare_s, 2), "model_s": round(model_s, 2),
        "candidates_per_s": round(len(texts) / (prepare_s + model_s), 3),
        "peak_gpu_memory_bytes": torch.cuda.max_memory_allocated() if device == "cuda" else None,
        "compared": compared,
        "command": "python " + " ".join(sys.argv),
    }
    text = orjson.dumps(report, option=orjson.OPT_INDENT_2).decode()
    print(text)
    if args.save:
        prefix = "multimodal_throughput-" + ("" if args.kv_layout == "auto" else f"kv-{args.kv_layout}-")
        print(f"saved {save(text, report['device'], args.results_dir, prefix)}", file=sys.stderr)


def timed_scoring(engine: ScoringEngine, inputs, device: str):
    """The engine's results for the inputs and the seconds they took (the device drained), after one batch's
    warm-up (first calls pay for lazy initialisation)."""
    engine.generate_and_score(inputs[: engine.batch_size])
    started = time.perf_counter()
    scored = engine.generate_and_score(inputs)
    if device == "cuda":
        torch.cuda.synchronize()
    return scored, time.perf_counter() - started


def _device_name(device: str) -> str:
    return torch.cuda.get_device_name(0) if device == "cuda" else "cpu"


if __name__ == "__main__":
    main()
