"""The batched, cache-sharing engine reproduces the naive CAP definition within 1e-4 (float32, CPU)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.engine import ScoringEngine
from capsel.cap_engine.inputs import CandidateText
from capsel.models.loading import describe_model, load_model
from tests.fixtures.candidates import mixed_candidates
from tests.fixtures.pool import tiny_model_dir
from tests.fixtures.tiny_models import FAMILIES, blocks_of
from tests.reference.naive_cap import naive_cap

TOLERANCE = 1e-4
HORIZON = 48


def _assert_matches(result, expected, path: str) -> None:
    assert result.excluded_reason == expected["excluded_reason"], (path, result.candidate_id)
    if expected["excluded_reason"]:
        assert result.layer_divergence is None and result.ppl is None and result.n_aligned is None
        return
    assert result.n_aligned == expected["n_aligned"], (path, result.candidate_id)
    assert result.layer_divergence == pytest.approx(expected["layer_divergence"], abs=TOLERANCE), path
    assert result.d_early == pytest.approx(expected["d_early"], abs=TOLERANCE), path
    assert result.d_late == pytest.approx(expected["d_late"], abs=TOLERANCE), path
    assert result.ppl == pytest.approx(expected["ppl"], rel=TOLERANCE), path


# The chat format on three families (it changes only the prompt ids, which every family takes alike).
CASES = [(family, "raw") for family in FAMILIES] + [(family, "chat") for family in ("llama", "qwen3", "gemma")]


@pytest.mark.parametrize(("family", "prompt_format"), CASES)
def test_engine_matches_naive_reference(family, prompt_format, tmp_path):
    candidates = mixed_candidates()
    chat = prompt_format == "chat"
    info = describe_model(str(tiny_model_dir(tmp_path / family, family, HORIZON, chat=chat)),
                          dtype="float32", device="cpu")
    loaded = load_model(info)
    eos_ids = set(info.eos_token_ids)
    assert len(eos_ids) == 2, "the fixture declares two EOS ids (tokenizer's and generation config's)"
    assert loaded.blocks is blocks_of(loaded.model, family)

    naive = [
        naive_cap(loaded.model, loaded.blocks, info.tokenizer, candidate, eos_ids, horizon=HORIZON,
                  prompt_format=prompt_format)
        for candidate in candidates
    ]
    # The pool must exercise what the engine has to get right, for this model and its EOS.
    scored = [n for n in naive if n["excluded_reason"] is None]
    reasons = {n["excluded_reason"] for n in naive}
    # A template gives even a blank instruction enough prompt ids, so chat has no short_prompt.
    assert {"short_response", "empty_generation"} | (set() if chat else {"short_prompt"}) <= reasons
    assert any(len(n["prompt_ids"]) == 256 for n in scored), "a prompt longer than 256 tokens was truncated"
    assert any(len(n["response_ids"]) < HORIZON for n in scored)
    assert any(0 < len(n["generated"]) < min(HORIZON, len(n["response_ids"])) for n in scored), "early EOS"
    assert any(n["n_aligned"] == HORIZON for n in scored), "full-length y-hat beside a full-length y"
    if chat:
        # every kept prompt, truncated or not, ends with the template's assistant opener
        assert all(n["prompt_ids"][-1] == info.tokenizer.convert_tokens_to_ids("w992") for n in naive)

    # auto resolves to the format the tokenizer calls for: chat with a template, raw without
    engine = ScoringEngine(loaded, ScoringConfig(horizon=HORIZON), batch_size=4)
    assert engine.config.prompt_format == prompt_format
    inputs = engine.prepare([CandidateText(**candidate) for candidate in candidates])
    fused = engine.generate_and_score(inputs)
    generations = engine.generate(inputs)
    stored = engine.score(generations)

    for expected, both, generation, divergence in zip(naive, fused, generations, stored):
        assert both.generation.generated_ids == generation.generated_ids
        if expected["generated"] is not None:
            assert generation.generated_ids == expected["generated"], expected["candidate_id"]
            assert generation.prompt_ids == expected["prompt_ids"]
            assert generation.response_ids == expected["response_ids"]
        assert generation.excluded_reason == both.generation.excluded_reason
        _assert_matches(both.divergence, expected, "fused")
        _assert_matches(divergence, expected, "two-branch")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("cuda_kv_layout", ["auto", "whole", "buffered", "graphed"])
def test_engine_on_cuda_matches_cpu(tmp_path, cuda_kv_layout):
    path = str(tiny_model_dir(tmp_path / "llama"))
    texts = [CandidateText(**candidate) for candidate in mixed_candidates()]
    results = {}
    for device in ("cpu", "cuda"):
        loaded = load_model(describe_model(path, dtype="float32", device=device))
        if device == "cuda":
            loaded = replace(loaded, kv_layout=cuda_kv_layout)
        engine = ScoringEngine(loaded, ScoringConfig(), 4)
        results[device] = engine.generate_and_score(engine.prepare(texts))
    for cpu, cuda in zip(results["cpu"], results["cuda"]):
        assert cpu.generation.generated_ids == cuda.generation.generated_ids
        if cpu.divergence.layer_divergence:
            assert cuda.divergence.layer_divergence == pytest.approx(cpu.divergence.layer_divergence, abs=TOLERANCE)
