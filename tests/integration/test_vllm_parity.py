"""vLLM and HF greedy decoding give the same y-hat ids, and so the same CAP scores (float32, vLLM's CPU build).

Runs in the environment `make setup-vllm` builds (`make test-vllm`); skipped where vLLM cannot start.
One engine start per model (a module fixture): each takes about half a minute on two cores.
"""

from __future__ import annotations

import json
from importlib import resources

import pytest

from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.engine import ScoringEngine
from capsel.cap_engine.generation import generation_results
from capsel.cap_engine.inputs import CandidateText
from capsel.cap_engine.vllm_generation import VLLMGenerator, VLLMOptions
from capsel.models.loading import describe_model, load_model
from tests.fixtures.candidates import mixed_candidates
from tests.fixtures.pool import tiny_model_dir
from tests.fixtures.vllm import requires_vllm

pytestmark = [pytest.mark.vllm, requires_vllm]

HORIZON = 48
# eager: torch.compile on two cores costs minutes for a few dozen prompts
OPTIONS = VLLMOptions(enforce_eager=True)


def both_routes(info, config: ScoringConfig, candidates: list[dict]):
    """(inputs, HF generations, fused HF scores, vLLM generations) for one model and pool."""
    engine = ScoringEngine(load_model(info), config, batch_size=4)
    inputs = engine.prepare([CandidateText(**candidate) for candidate in candidates])
    hf_generations = engine.generate(inputs)
    fused = engine.generate_and_score(inputs)
    vllm = VLLMGenerator(info, config, OPTIONS)
    try:
        vllm_generations = generation_results(inputs, vllm)
    finally:
        vllm.close()
    return engine, inputs, hf_generations, fused, vllm_generations


@pytest.fixture(scope="module", params=["llama", "qwen3"])
def tiny_routes(request, tmp_path_factory):
    # 64-dimensional heads (hidden 256, 4 heads): vLLM's attention kernels take no smaller ones.
    folder = tiny_model_dir(tmp_path_factory.mktemp("vllm") / request.param, request.param, HORIZON, hidden=256)
    info = describe_model(str(folder), dtype="float32", device="cpu")
    return info, both_routes(info, ScoringConfig(horizon=HORIZON, prompt_format="raw"), mixed_candidates())


def test_tiny_models_vllm_ids_equal_hf_ids(tiny_routes):
    info, (_, inputs, hf, _, vllm) = tiny_routes
    assert [g.generated_ids for g in vllm] == [g.generated_ids for g in hf]
    assert [g.excluded_reason for g in vllm] == [g.excluded_reason for g in hf]
    assert {g.generator for g in vllm} == {"vllm"}
    # The pool reaches every case the generator must get right: the fixture's EOS ids make some
    # generations empty and some stop early, others run to R; some prompts were cut to the last P ids.
    kept = [(item, g) for item, g in zip(inputs, vllm) if item.excluded_reason is None]
    lengths = [len(g.generated_ids) for _, g in kept]
    assert 0 in lengths and HORIZON in lengths and any(0 < n < HORIZON for n in lengths)
    assert max(lengths) == HORIZON, "max_tokens is R"
    assert any(g.excluded_reason == "empty_generation" for g in vllm)
    assert any(len(item.prompt_ids) == 256 for item, _ in kept), "a prompt was truncated to P"
    assert all(not set(g.generated_ids) & info.eos_token_ids for _, g in kept), "y-hat ends before EOS"


def assert_same_scores(from_vllm, fused) -> None:
    """Scores of stored vLLM y-hat equal the HF route's, which scores while it generates (fused)."""
    assert [s.candidate_id for s in from_vllm] == [s.candidate_id for s in fused]
    for stored, both in zip(from_vllm, fused):
        expected = both.divergence
        assert stored.excluded_reason == expected.excluded_reason, stored.candidate_id
        if expected.excluded_reason is None:
            assert stored.n_aligned == expected.n_aligned
            assert stored.layer_divergence == pytest.approx(expected.layer_divergence, abs=1e-5)
            assert (stored.d_early, stored.d_late) == pytest.approx((expected.d_early, expected.d_late), abs=1e-5)
            assert stored.ppl == pytest.approx(expected.ppl, rel=1e-5)


def test_tiny_models_cap_scores_from_vllm_equal_hf(tiny_routes):
    _, (engine, _, _, fused, vllm) = tiny_routes
    from_vllm = engine.score(vllm)
    assert sum(s.excluded_reason is None for s in from_vllm) >= 5
    assert_same_scores(from_vllm, fused)


def real_candidates(count: int) -> list[dict]:
    """The first math and code rows of the bundled real pool (GSM8K train, HumanEval)."""
    rows = [json.loads(line) for line in
            resources.files("capsel.data.real_pool").joinpath("pool.jsonl").read_text().splitlines()]
    picked = [r for r in rows if r["domain"] == "math"][: count // 2] + [r for r in rows if r["domain"] == "code"]
    return [{"candidate_id": r["lab_id"], "instruction": r["instruction"], "input": r["input"],
             "response": r["output"]} for r in picked[:count]]


@pytest.mark.slow
def test_smollm2_vllm_ids_and_scores_equal_hf(smollm2_instruct_dir):
    info = describe_model(str(smollm2_instruct_dir), dtype="float32", device="cpu")
    # P = 64 cuts most chat prompts; R = 24 keeps two cores' decoding short.
    config = ScoringConfig(prompt_tokens=64, horizon=24)
    engine, inputs, hf, fused, vllm = both_routes(info, config, real_candidates(8))
    assert engine.config.prompt_format == "chat"
    assert any(len(item.prompt_ids) == 64 for item in inputs)
    assert [g.generated_ids for g in vllm] == [g.generated_ids for g in hf]
    assert all(g.generated_ids for g in vllm), "a real model answers every prompt"
    assert_same_scores(engine.score(vllm), fused)
