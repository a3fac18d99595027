"""CAP on a real instruct model (SmolLM2-135M-Instruct from the registry) and real GSM8K rows, in both prompt formats.

The engine reproduces the naive reference within 1e-4 in float32; under the raw prompt the instruct model ends
most answers at once, which the run summary reports, while its chat template gives real answers.
"""

from __future__ import annotations

import pytest

from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.engine import ScoringEngine
from capsel.cap_engine.inputs import CandidateText
from capsel.db import open_db
from capsel.methods.cap.scorer import CapScorer
from capsel.models.loading import describe_model, load_model
from capsel.runner.job import run_scorer
from capsel_lab.real_pool import RealPoolSpec, real_pool_records
from capsel_lab.real_sources import bundled_real_sources
from tests.fixtures.pool import append_candidates
from tests.reference.naive_cap import naive_cap

pytestmark = pytest.mark.slow
TOLERANCE = 1e-4


def gsm8k_candidates(n: int) -> list[dict]:
    """The first n clean math rows of the bundled real pool, as candidate dicts."""
    records = real_pool_records(bundled_real_sources(), RealPoolSpec(n_math=n, n_code=0, junk_share=0))
    return [{"candidate_id": r["lab_id"], "instruction": r["instruction"], "input": r["input"],
             "response": r["output"]} for r in records]


@pytest.fixture(scope="module")
def loaded(smollm2_instruct_dir):
    return load_model(describe_model(str(smollm2_instruct_dir), dtype="float32", device="cpu"))


# The naive reference reruns the whole sequence for every greedy step: a shorter horizon keeps it affordable.
HORIZON = 16


@pytest.mark.parametrize(("prompt_format", "n_candidates"), [("raw", 10), ("chat", 2)])
def test_engine_matches_the_naive_reference_on_smollm2(loaded, prompt_format, n_candidates):
    candidates = gsm8k_candidates(n_candidates)
    info = loaded.info
    naive = [naive_cap(loaded.model, loaded.blocks, info.tokenizer, c, set(info.eos_token_ids), horizon=HORIZON,
                       prompt_format=prompt_format) for c in candidates]
    if prompt_format == "raw":
        # most raw answers end at once, which the engine must get right, but not all of them
        reasons = [n["excluded_reason"] for n in naive]
        assert "empty_generation" in reasons and None in reasons
    engine = ScoringEngine(loaded, ScoringConfig(horizon=HORIZON, prompt_format=prompt_format), batch_size=4)
    scored = engine.generate_and_score(engine.prepare([CandidateText(**c) for c in candidates]))
    for expected, result in zip(naive, scored):
        assert result.generation.prompt_ids == expected["prompt_ids"]
        assert result.generation.generated_ids == expected["generated"]
        divergence = result.divergence
        assert divergence.excluded_reason == expected["excluded_reason"]
        if expected["excluded_reason"] is None:
            assert divergence.n_aligned == expected["n_aligned"]
            assert divergence.layer_divergence == pytest.approx(expected["layer_divergence"], abs=TOLERANCE)
            assert (divergence.d_early, divergence.d_late) == pytest.approx(
                (expected["d_early"], expected["d_late"]), abs=TOLERANCE)
            assert divergence.ppl == pytest.approx(expected["ppl"], rel=TOLERANCE)
    if prompt_format == "chat":
        # the template wraps the question and ends with the assistant's turn opener; answers are real
        opener = info.tokenizer("<|im_start|>assistant\n", add_special_tokens=False).input_ids
        assert all(n["prompt_ids"][-len(opener):] == opener for n in naive)
        assert all(n["excluded_reason"] is None for n in naive)


def test_raw_prompts_lose_most_answers_and_the_summary_says_which_format_to_try(loaded, tmp_path):
    candidates = gsm8k_candidates(12)
    summaries = {}
    for prompt_format in ("raw", "chat"):
        con = open_db(tmp_path / f"{prompt_format}.duckdb")
        append_candidates(con, candidates)
        summaries[prompt_format] = run_scorer(
            con, CapScorer.of(ScoringEngine(loaded, ScoringConfig(prompt_format=prompt_format), batch_size=6)))
        con.close()
    raw, chat = summaries["raw"], summaries["chat"]
    assert raw.excluded["empty_generation"] > 0.2 * len(candidates)
    [note] = raw.notes
    assert note.startswith(f"math: {raw.excluded['empty_generation']} of 12 generations") and "--prompt-format chat" in note
    assert chat.excluded.get("empty_generation", 0) <= 0.2 * len(candidates) and chat.notes == []
