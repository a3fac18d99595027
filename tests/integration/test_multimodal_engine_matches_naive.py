"""The engine scores VLM candidates (images in the shared prefix) as the naive full-sequence reference does.

Tiny random VLMs built from configs (capsel_lab.tiny_vlm), float32 on CPU, within 1e-4: the candidates
batched (left-padded, with the positions each model expects) and one at a time.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.engine import ScoringEngine
from capsel.cap_engine.inputs import CandidateText
from capsel.cap_engine.multimodal_inputs import MultimodalGeneration, with_vision
from capsel.models.loading import load_model
from capsel_lab.tiny_vlm import build_tiny_vlm
from tests.fixtures.tiny_vlm_rows import (
    HAS_TORCHVISION,
    HORIZON,
    PROMPT_TOKENS,
    SEEDS,
    describe_tiny_vlm,
    vlm_candidates,
    vlm_images,
)
from tests.reference.naive_multimodal import naive_multimodal_cap

torch.set_num_threads(1)
TOLERANCE = 1e-4

# Where each kind keeps its text decoder blocks and which ids make up an image span, written out by hand.
TEXT_BLOCKS = {kind: "model.language_model.layers" for kind in ("llava", "gemma3", "qwen2_vl", "molmo2")}
MARKERS = {
    "llava": ("image_token_id",),
    "gemma3": ("boi_token_index", "image_token_index", "eoi_token_index"),
    "qwen2_vl": ("vision_start_token_id", "image_token_id", "vision_end_token_id"),
}
# Molmo2, the paper's VLM: transformers builds its processors only with torchvision (not installable beside
# torch 2.13's CPU build from the registry; the lent GPU machines have it)
MOLMO2 = pytest.param("molmo2", marks=pytest.mark.skipif(not HAS_TORCHVISION, reason="Molmo2's processor needs "
                                                                                       "torchvision"))
KINDS = ["llava", "gemma3", "qwen2_vl", MOLMO2]


def _module(model, path: str):
    for name in path.split("."):
        model = getattr(model, name)
    return model


def _assert_matches(result, expected) -> None:
    assert result.excluded_reason == expected["excluded_reason"], result.candidate_id
    assert result.images_dropped == expected["images_dropped"], result.candidate_id
    if expected["excluded_reason"]:
        assert result.layer_divergence is None
        return
    assert result.n_aligned == expected["n_aligned"]
    assert result.layer_divergence == pytest.approx(expected["layer_divergence"], abs=TOLERANCE)
    assert result.d_early == pytest.approx(expected["d_early"], abs=TOLERANCE)
    assert result.d_late == pytest.approx(expected["d_late"], abs=TOLERANCE)
    assert result.ppl == pytest.approx(expected["ppl"], rel=TOLERANCE)


@pytest.mark.parametrize("kind", KINDS)
def test_multimodal_engine_matches_naive_reference(kind, tmp_path):
    # seeds whose y-hats do not all start with one token (see _declare_eos)
    info = describe_tiny_vlm(build_tiny_vlm(tmp_path / kind, kind, seed=SEEDS.get(kind, 0)), kind)
    loaded = load_model(info)
    assert info.processor is not None and info.n_layers == loaded.model.config.text_config.num_hidden_layers
    assert loaded.blocks is _module(loaded.model, TEXT_BLOCKS[kind]), "the text decoder's blocks, not the vision's"
    markers = _markers(loaded, kind)
    candidates = vlm_candidates(vlm_images(tmp_path))
    config = ScoringConfig(horizon=HORIZON, prompt_tokens=PROMPT_TOKENS)
    _declare_eos(loaded, config, candidates)
    info = loaded.info

    naive = [
        naive_multimodal_cap(loaded.model, loaded.blocks, info.processor, candidate, set(info.eos_token_ids),
                             markers, prompt_tokens=PROMPT_TOKENS, horizon=HORIZON)
        for candidate in candidates
    ]
    by_id = {n["candidate_id"]: n for n in naive}
    assert by_id["drops-one"]["images_dropped"] == 1 and by_id["short"]["excluded_reason"] == "short_response"
    def text_ids(name: str) -> int:
        return sum(token not in markers for token in by_id[name]["prompt_ids"])

    # both images of the short two-image prompt are kept; the long one keeps exactly P text ids and one image
    assert by_id["two-images"]["images_dropped"] == 0 and text_ids("two-images") <= PROMPT_TOKENS
    assert text_ids("drops-one") == PROMPT_TOKENS
    spans = "".join("i" if token in markers else "t" for token in by_id["drops-one"]["prompt_ids"]).split("t")
    assert len([span for span in spans if span]) == 1, "the kept image's span, whole and alone"
    assert any(n["generated"] and len(n["response_ids"]) < HORIZON for n in naive), "a y shorter than R"
    assert any(n["excluded_reason"] == "empty_generation" for n in naive)
    assert any(0 < len(n["generated"] or []) < HORIZON for n in naive), "a y-hat stopped early by EOS"

    engine = ScoringEngine(loaded, config, batch_size=4)
    # Llava, Gemma 3 and Qwen2-VL stack their prompts (images of three sizes, and a text-only prompt, in one
    # batch); Molmo2's run one at a time
    assert engine.batch_size == (1 if kind == "molmo2" else 4)
    inputs = engine.prepare([CandidateText(**candidate) for candidate in candidates])
    fused = engine.generate_and_score(inputs)
    alone = ScoringEngine(loaded, config, batch_size=1).generate_and_score(inputs)
    generations = engine.generate(inputs)
    stored = engine.score(generations)
    # A stored y-hat (no tensors) joined again to its prepared input scores the same.
    rejoined = engine.score([with_vision(_plain(g), item) for g, item in zip(generations, inputs)])

    for expected, item, both, one, generation, divergence, again in zip(naive, inputs, fused, alone, generations,
                                                                         stored, rejoined):
        assert item.prompt_ids == expected["prompt_ids"] and item.response_ids == expected["response_ids"]
        assert generation.generated_ids == expected["generated"] == both.generation.generated_ids
        assert one.generation.generated_ids == expected["generated"]
        assert both.generation.images_dropped == expected["images_dropped"]
        for result in (both.divergence, one.divergence, divergence, again):
            _assert_matches(result, expected)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("kind", KINDS)
def test_multimodal_engine_on_cuda_matches_cpu(kind, tmp_path):
    """The VLM path on a GPU (pixels, cache and hooks on the device) gives the CPU's y-hat and divergences."""
    folder = build_tiny_vlm(tmp_path / kind, kind, seed=SEEDS.get(kind, 0))
    candidates = [CandidateText(**candidate) for candidate in vlm_candidates(vlm_images(tmp_path))]
    config = ScoringConfig(horizon=HORIZON, prompt_tokens=PROMPT_TOKENS)
    # cuDNN may run the patch-embedding convolution in TF32 otherwise, which is not a float32 comparison
    torch.backends.cudnn.allow_tf32 = False
    results = {}
    for device in ("cpu", "cuda"):
        engine = ScoringEngine(load_model(describe_tiny_vlm(folder, kind, device)), config, batch_size=4)
        results[device] = engine.generate_and_score(engine.prepare(candidates))
    for cpu, cuda in zip(results["cpu"], results["cuda"]):
        assert cuda.generation.generated_ids == cpu.generation.generated_ids, cpu.candidate_id
        assert cuda.divergence.excluded_reason == cpu.divergence.excluded_reason
        assert cuda.divergence.images_dropped == cpu.divergence.images_dropped
        if cpu.divergence.layer_divergence is not None:
            assert cuda.divergence.layer_divergence == pytest.approx(cpu.divergence.layer_divergence, abs=TOLERANCE)
            assert cuda.divergence.ppl == pytest.approx(cpu.divergence.ppl, rel=TOLERANCE)


def _markers(loaded, kind: str) -> set[int]:
    """The ids of an image's span: named by the config, or for Molmo2 (whose column token the config does not
    name) the tokens its processor writes, spelled out."""
    if kind == "molmo2":
        tokens = ["<im_patch>", "<im_col>", "<im_start>", "<low_res_im_start>", "<im_end>"]
        return set(loaded.info.processor.tokenizer.convert_tokens_to_ids(tokens))
    return {getattr(loaded.model.config, name) for name in MARKERS[kind]}


def _declare_eos(loaded, config: ScoringConfig, candidates: list[dict]) -> None:
    """Two more EOS ids: one y-hat's first token (it comes out empty) and a later first-seen token of another
    y-hat (it stops early)."""
    probe = ScoringEngine(loaded, config)
    generated = {g.candidate_id: g.generated_ids or []
                 for g in probe.generate(probe.prepare([CandidateText(**c) for c in candidates]))}
    firsts = [tokens[0] for tokens in generated.values() if tokens]
    # a first token no other y-hat starts with, so that only its own y-hat comes out empty
    empty = next(tokens[0] for name, tokens in generated.items()
                 if name != "two-images" and tokens and firsts.count(tokens[0]) == 1)
    early = next(tokens[i] for tokens in generated.values() for i in range(1, len(tokens))
                 if tokens[i] not in tokens[:i] and tokens[0] != empty and empty not in tokens[:i])
    loaded.info = replace(loaded.info, eos_token_ids=loaded.info.eos_token_ids | {empty, early})


def _plain(generation: MultimodalGeneration):
    """The generation as the database would give it back: ids and reason only."""
    from capsel.cap_engine.results import GenerationResult

    return GenerationResult(generation.candidate_id, generation.prompt_ids, generation.response_ids,
                            generation.generated_ids, generation.excluded_reason, "stored")
