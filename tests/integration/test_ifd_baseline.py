"""IFD baseline against Hugging Face's own masked-label loss, the way Li et al. compute it."""

from __future__ import annotations

import math

import pytest
import torch

from capsel.cap_engine.inputs import CandidateText, prompt_text
from capsel.db import open_db
from capsel.methods.ifd.scorer import IFD_GE_1, IfdConfig, IfdScorer
from capsel.runner.job import run_scorer
from capsel.scorers.response_loss import response_token_nll
from capsel.scorers.window import PROMPT_FILLS_WINDOW, window_inputs
from capsel.selection.params import SelectionParams
from capsel.selection.plan import build_selection
from capsel.selection.scoring_key import resolve_scoring_key
from tests.fixtures.candidates import mixed_candidates
from tests.fixtures.pool import append_candidates
from tests.reference.naive_cap import naive_prompt_and_response
from tests.support.float_parity import ATOL, RTOL


def hf_loss(model, ids: list[int], n_masked: int) -> float:
    """Mean loss of HF's labels path with the first n_masked labels set to -100 (Li et al.'s recipe)."""
    labels = torch.tensor([ids])
    labels[0, :n_masked] = -100
    with torch.no_grad():
        return float(model(torch.tensor([ids]), labels=labels).loss)


def reference_ifd(model, tokenizer, candidate: dict, max_length: int, prompt_format: str = "raw") -> float | str:
    # untruncated ids: IFD cuts [prompt; response] to its window itself
    prompt, response = naive_prompt_and_response(tokenizer, candidate, 10**9, 10**9, prompt_format)[:2]
    if len(prompt) >= max_length:
        return PROMPT_FILLS_WINDOW
    whole = (prompt + response)[:max_length]  # Li et al. keep the first max_length ids
    kept = whole[len(prompt):]
    bos = tokenizer("").input_ids
    if prompt == bos:  # both contexts are the same ids: the ratio is 1 exactly
        return 1.0
    conditional = hf_loss(model, whole, len(prompt))
    unconditional = hf_loss(model, bos + kept, len(bos))
    return math.exp(conditional) / math.exp(unconditional)


@pytest.mark.parametrize(("max_length", "prompt_format"), [(1024, "raw"), (200, "raw"), (200, "chat")])
def test_ifd_equals_the_masked_label_losses(info, chat_info, max_length, prompt_format):
    info = chat_info if prompt_format == "chat" else info
    candidates = mixed_candidates()
    scorer = IfdScorer(IfdConfig(max_length=max_length, prompt_format=prompt_format), info, batch_size=4)
    results = scorer.score([CandidateText(**c) for c in candidates])
    model = scorer.loaded.model
    outcomes = set()
    for candidate, result in zip(candidates, results):
        expected = reference_ifd(model, info.tokenizer, candidate, max_length, prompt_format)
        if isinstance(expected, str):
            assert (result.score, result.excluded_reason) == (None, expected)
        else:
            assert result.score == pytest.approx(expected, rel=1e-4)
            assert result.excluded_reason == (IFD_GE_1 if expected >= 1 else None)
        outcomes.add(result.excluded_reason)
    if max_length == 200:
        assert PROMPT_FILLS_WINDOW in outcomes  # the 300-word prompt fills the window
    assert IFD_GE_1 in outcomes and None in outcomes


def test_prompt_ids_are_context_never_targets(info):
    scorer = IfdScorer(IfdConfig(), info)
    loaded = scorer.loaded
    tokenizer = info.tokenizer
    prompt = tokenizer("w1 w2 w3 w4 w5").input_ids
    other_prompt = tokenizer("w1 w2 w900 w4 w5").input_ids
    response = tokenizer("w10 w11 w12 w13", add_special_tokens=False).input_ids
    with torch.no_grad():
        conditional, changed, unconditional, unconditional_again = response_token_nll(
            loaded, [prompt, other_prompt, scorer.empty_prefix, scorer.empty_prefix],
            [response, response, response, response])
        logits = loaded.model(torch.tensor([prompt + response])).logits[0]
    # one loss per response id, each the -log p of that id at its own position
    assert len(conditional) == len(response)
    log_probs = torch.log_softmax(logits.double(), dim=-1)
    expected = [-float(log_probs[len(prompt) - 1 + t, token]) for t, token in enumerate(response)]
    assert conditional.double().tolist() == pytest.approx(expected, rel=1e-5)
    # a prompt token changes the context of the conditional loss, never the unconditional one
    assert not torch.allclose(conditional, changed)
    # two rows of one batch: the same function, though the BLAS kernel may sum each row in its own order
    torch.testing.assert_close(unconditional, unconditional_again, rtol=RTOL, atol=ATOL)
    items = window_inputs([CandidateText("a", "w1 w2 w3 w4 w5", "", "w10 w11 w12 w13"),
                        CandidateText("b", "w1 w2 w900 w4 w5", "", "w10 w11 w12 w13")],
                       tokenizer, IfdConfig(), scorer.empty_prefix)
    a, b = scorer.score([CandidateText("a", "w1 w2 w3 w4 w5", "", "w10 w11 w12 w13"),
                         CandidateText("b", "w1 w2 w900 w4 w5", "", "w10 w11 w12 w13")])
    unconditional_ppl = math.exp(float(unconditional.double().mean()))
    assert a.score * unconditional_ppl == pytest.approx(math.exp(float(conditional.double().mean())), rel=1e-5)
    assert b.score * unconditional_ppl == pytest.approx(math.exp(float(changed.double().mean())), rel=1e-5)
    assert items[0].n_scored == items[1].n_scored == len(response)


def test_without_a_bos_both_losses_start_at_the_second_response_id(info):
    scorer = IfdScorer(IfdConfig(), info)
    scorer.empty_prefix = []  # as for a tokenizer that adds nothing to an empty text
    candidate = mixed_candidates()[2]
    (result,) = scorer.score([CandidateText(**candidate)])
    tokenizer, model = info.tokenizer, scorer.loaded.model
    prompt = tokenizer(prompt_text(candidate["instruction"], candidate["input"])).input_ids
    response = tokenizer(candidate["response"].strip(), add_special_tokens=False).input_ids
    conditional = hf_loss(model, prompt + response, len(prompt) + 1)
    unconditional = hf_loss(model, response, 1)
    assert result.score == pytest.approx(math.exp(conditional - unconditional), rel=1e-4)


def test_ifd_ge_1_is_stored_with_its_score_but_never_selected(tmp_path, info):
    con = open_db(tmp_path / "capsel.duckdb")
    pool = mixed_candidates() + mixed_candidates(seed=3, prefix="b") + mixed_candidates(seed=5, prefix="d")
    append_candidates(con, pool)
    run_scorer(con, IfdScorer(IfdConfig(), info, batch_size=4))
    rows = con.execute("select candidate_id, score, excluded_reason from method_scores").fetchall()
    assert len(rows) == len(pool)
    high = {cid for cid, score, reason in rows if reason == IFD_GE_1}
    assert high and all(score >= 1 for cid, score, reason in rows if reason == IFD_GE_1)
    eligible = sorted(((score, cid) for cid, score, reason in rows if reason is None), key=lambda p: (-p[0], p[1]))
    key = resolve_scoring_key(con, method="ifd")
    selection = build_selection(con, SelectionParams(budget="4", method="ifd"), key)
    members = selection.members
    assert members["candidate_id"].tolist() == [cid for _, cid in eligible[:4]]
    assert not set(members["candidate_id"]) & high
    assert selection.pools[0].n_excluded == len(rows) - len(eligible)
    con.close()
