"""PPL baseline: the paper's limits against a direct computation, reuse of CAP's PPL, incremental runs."""

from __future__ import annotations

import math

import pytest
import torch

from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.engine import ScoringEngine
from capsel.cap_engine.inputs import CandidateText
from capsel.db import open_db
from capsel.methods.cap.scorer import CapScorer
from capsel.methods.ppl.scorer import PplConfig, PplScorer
from capsel.models.loading import load_model
from capsel.runner.job import run_scorer
from capsel.store.scope import Scope
from tests.fixtures.candidates import mixed_candidates
from tests.fixtures.pool import append_candidates
from tests.reference.naive_cap import naive_prompt_and_response


@pytest.fixture()
def con(tmp_path):
    connection = open_db(tmp_path / "capsel.duckdb")
    append_candidates(connection, mixed_candidates())
    yield connection
    connection.close()


def naive_ppl(model, tokenizer, candidate: dict, prompt_tokens=256, horizon=48, min_prompt=2, min_response=6,
              prompt_format="raw"):
    """exp(mean NLL) of the kept response ids from one full forward of [prompt; response], or the exclusion."""
    full_prompt, full_response, prompt, response = naive_prompt_and_response(
        tokenizer, candidate, prompt_tokens, horizon, prompt_format)
    if len(full_prompt) < min_prompt:
        return "short_prompt"
    if len(full_response) < min_response:
        return "short_response"
    with torch.no_grad():
        logits = model(torch.tensor([prompt + response])).logits[0].double()
    log_probs = torch.log_softmax(logits, dim=-1)
    nll = [-float(log_probs[len(prompt) - 1 + t, token]) for t, token in enumerate(response)]
    return math.exp(sum(nll) / len(nll))


def stored_scores(con, method="ppl") -> dict:
    return {row[0]: (row[1], row[2]) for row in con.execute(
        "select candidate_id, score, excluded_reason from method_scores where method = ?", [method]).fetchall()}


@pytest.mark.parametrize("prompt_format", ["raw", "chat"])
def test_ppl_matches_a_direct_computation_with_the_paper_limits(info, chat_info, prompt_format):
    info = chat_info if prompt_format == "chat" else info
    candidates = mixed_candidates()
    scorer = PplScorer(PplConfig(prompt_format=prompt_format), info, batch_size=4)
    results = scorer.score([CandidateText(**c) for c in candidates])
    model = scorer.loaded.model
    # a template gives even a blank instruction enough prompt ids: chat has no short_prompt
    checked = {"short_response": 0, "scored": 0} | ({} if prompt_format == "chat" else {"short_prompt": 0})
    for candidate, result in zip(candidates, results):
        expected = naive_ppl(model, info.tokenizer, candidate, prompt_format=prompt_format)
        if isinstance(expected, str):
            assert (result.score, result.excluded_reason) == (None, expected)
            checked[expected] += 1
        else:
            assert result.excluded_reason is None
            assert result.score == pytest.approx(expected, rel=1e-4)
            checked["scored"] += 1
    # the pool has prompts over 256 ids, responses over 48, exactly 6, and both exclusions
    assert min(checked.values()) >= 1


def test_only_the_last_256_prompt_and_first_48_response_ids_count(info):
    scorer = PplScorer(PplConfig(), info)
    base = mixed_candidates()[0]  # 300-word instruction, 60-word response
    words_prompt, words_response = base["instruction"].split(), base["response"].split()
    changed_head = {**base, "candidate_id": "head", "instruction": " ".join(["w1"] * 10 + words_prompt[10:])}
    changed_tail = {**base, "candidate_id": "tail", "response": " ".join(words_response[:48] + ["w2"] * 12)}
    changed_kept = {**base, "candidate_id": "kept", "response": " ".join(["w3"] + words_response[1:])}
    scores = [r.score for r in scorer.score([CandidateText(**c) for c in (base, changed_head, changed_tail,
                                                                         changed_kept)])]
    assert scores[0] == pytest.approx(scores[1], rel=1e-6)
    assert scores[0] == pytest.approx(scores[2], rel=1e-6)
    assert scores[3] != pytest.approx(scores[0], rel=1e-6)
    smaller = PplScorer(PplConfig(prompt_tokens=8, horizon=6), info)
    (direct,) = smaller.score([CandidateText(**base)])
    assert direct.score == pytest.approx(naive_ppl(smaller.loaded.model, info.tokenizer, base, 8, 6), rel=1e-4)


def test_ppl_is_taken_from_cap_scoring_with_the_same_model_and_limits(con, info):
    # a different depth split does not change PPL: CAP's rows are reusable
    run_scorer(con, CapScorer.of(ScoringEngine(load_model(info), ScoringConfig(early=0.25), batch_size=4)))
    cap = dict(con.execute("select candidate_id, ppl from divergences").fetchall())
    reasons = dict(con.execute("select candidate_id, excluded_reason from divergences").fetchall())
    empty = [cid for cid, reason in reasons.items() if reason == "empty_generation"]
    assert empty, "the fixture pool has an empty y-hat"
    by_id = {c["candidate_id"]: c for c in mixed_candidates()}
    # first without the candidates whose y-hat is empty: everything comes from CAP
    con.execute("delete from candidates where list_contains(?, candidate_id)", [empty])
    scorer = PplScorer(PplConfig(), info)
    summary = run_scorer(con, scorer)
    assert scorer._loaded is None, "every PPL came from CAP: the model must not be loaded"
    assert summary.n_processed == len(by_id) - len(empty)
    # the reuse counter counts values; CAP's short-prompt/response exclusions are counted as exclusions
    n_short = sum(reason in ("short_prompt", "short_response") for reason in reasons.values())
    assert n_short, "the fixture pool has a short candidate"
    assert summary.n_reused == len(by_id) - len(empty) - n_short
    assert sum(summary.excluded.values()) == n_short
    stored = stored_scores(con)
    for candidate_id, (score, reason) in stored.items():
        if reasons[candidate_id] in ("short_prompt", "short_response"):
            assert (score, reason) == (None, reasons[candidate_id])
        else:
            assert (score, reason) == (cap[candidate_id], None)
    # an empty y-hat leaves CAP without a PPL: that one is computed, and it is the reference's
    append_candidates(con, [by_id[cid] for cid in empty])
    summary = run_scorer(con, scorer)
    assert (summary.n_processed, summary.n_reused) == (len(empty), 0)
    stored = stored_scores(con)
    for cid in empty:
        assert stored[cid][0] == pytest.approx(naive_ppl(scorer.loaded.model, info.tokenizer, by_id[cid]), rel=1e-4)


def test_cap_scored_with_other_limits_is_not_reused(con, info):
    run_scorer(con, CapScorer.of(ScoringEngine(load_model(info), ScoringConfig(horizon=12), batch_size=4)))
    summary = run_scorer(con, PplScorer(PplConfig(), info, batch_size=4))
    assert summary.n_reused == 0 and summary.n_processed == len(mixed_candidates())


def test_cap_scored_in_another_prompt_format_is_not_reused(db, pool, chat_info):
    append_candidates(db, pool)
    run_scorer(db, CapScorer.of(ScoringEngine(load_model(chat_info), ScoringConfig(prompt_format="chat"), batch_size=4)))
    raw = run_scorer(db, PplScorer(PplConfig(prompt_format="raw"), chat_info, batch_size=4))
    assert raw.n_reused == 0 and raw.n_processed == len(pool)
    chat = run_scorer(db, PplScorer(PplConfig(prompt_format="chat"), chat_info, batch_size=4))
    assert chat.n_reused > 0


def test_incremental_and_resumable(con, info):
    scorer = PplScorer(PplConfig(), info, batch_size=3)
    first = run_scorer(con, scorer, Scope(limit=5))
    assert first.n_processed == 5 and len(stored_scores(con)) == 5

    class Crash(Exception):
        pass

    calls = []

    def crashing(batch):
        calls.append(len(batch))
        if len(calls) == 2:
            raise Crash
        return PplScorer.score(scorer, batch)

    scorer.score = crashing
    with pytest.raises(Crash):
        run_scorer(con, scorer)
    assert len(stored_scores(con)) == 5 + calls[0]
    status = con.execute("select status from runs where kind = 'score-baseline' order by started_at").fetchall()
    assert [s[0] for s in status] == ["completed", "failed"]
    del scorer.score
    resumed = run_scorer(con, scorer)
    assert resumed.n_already_done == 5 + calls[0]
    assert resumed.n_processed == len(mixed_candidates()) - 5 - calls[0]
    # new candidates land: only they are scored
    append_candidates(con, mixed_candidates(seed=11, prefix="n"))
    again = run_scorer(con, scorer)
    assert again.n_processed == len(mixed_candidates())
    assert len(stored_scores(con)) == 2 * len(mixed_candidates())
    assert con.execute("select count(*) from (select distinct candidate_id from method_scores)").fetchone()[0] == \
        2 * len(mixed_candidates())
