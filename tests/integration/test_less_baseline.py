"""LESS against a direct computation: peft's own LoRA model, HF's masked-label loss, full autograd gradients."""

from __future__ import annotations

import orjson
import pandas as pd
import pytest
import torch
import transformers as tf
from peft import LoraConfig, get_peft_model

from capsel.cap_engine.inputs import CandidateText, prompt_text
from capsel.config import load_settings
from capsel.methods.less import LessSpec
from capsel.methods.less.countsketch import CountSketch
from capsel.methods.less.lora_gradients import response_loss
from capsel.methods.less.scorer import LessConfig, LessFeatureScorer
from capsel.methods.less.target import TargetFile, stored_target
from capsel.methods.spec import ModelSpec
from capsel.scorers.window import PROMPT_FILLS_WINDOW
from capsel.selection.params import SelectionParams
from capsel.selection.plan import build_selection
from capsel.selection.scoring_key import resolve_scoring_key
from capsel.stages.context import RunContext
from capsel.stages.score import ScoreRequest, score
from tests.fixtures.candidates import mixed_candidates
from tests.fixtures.pool import append_candidates

MAX_LENGTH = 100
PEFT_PREFIX = "base_model.model."


@pytest.fixture(scope="module")
def config():
    return LessConfig(max_length=MAX_LENGTH)


def eligible(candidates: list[dict], tokenizer) -> list[dict]:
    """Candidates whose prompt leaves room in the window for at least one response id."""
    return [c for c in candidates if 0 < len(tokenizer(prompt_text(c["instruction"], c["input"])).input_ids) < MAX_LENGTH
            and c["response"].strip()]


def peft_gradients(model_dir, tokenizer, candidate: dict, config: LessConfig) -> dict[str, torch.Tensor]:
    """Full LoRA gradients of HF's loss with the prompt's labels set to -100, from a fresh peft model."""
    model = tf.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    torch.manual_seed(config.lora_init_seed)
    lora = get_peft_model(model, LoraConfig(r=config.lora_rank, lora_alpha=config.lora_alpha, lora_dropout=0.0,
                                            target_modules=list(config.target_modules)))
    prompt = tokenizer(prompt_text(candidate["instruction"], candidate["input"])).input_ids
    response = tokenizer(candidate["response"].strip(), add_special_tokens=False).input_ids
    ids = (prompt + response)[:config.max_length]
    labels = torch.tensor([ids])
    labels[0, :len(prompt)] = -100
    loss = lora(input_ids=torch.tensor([ids]), labels=labels).loss
    named = [(name, parameter) for name, parameter in lora.named_parameters() if parameter.requires_grad]
    grads = torch.autograd.grad(loss, [parameter for _, parameter in named])
    return {name.removeprefix(PEFT_PREFIX): grad for (name, _), grad in zip(named, grads)}


def unit(vector: torch.Tensor) -> torch.Tensor:
    return vector.double() / vector.double().norm()


def test_features_and_scores_match_full_lora_gradients(model_dir, info, config):
    candidates = eligible(mixed_candidates(), info.tokenizer)
    scorer = LessFeatureScorer(config, info)
    results = scorer.score([CandidateText(**c) for c in candidates])
    sketch = CountSketch(config.sketch_dim, config.sketch_seed)
    full, sketched = [], []
    for candidate, result in zip(candidates, results):
        grads = peft_gradients(model_dir, info.tokenizer, candidate, config)
        # no warmup: B starts at zero, so A gets no gradient and B all of it
        assert all(float(g.abs().max()) == 0.0 for name, g in grads.items() if "lora_A" in name)
        assert all(float(g.abs().max()) > 0.0 for name, g in grads.items() if "lora_B" in name)
        dense = sum(sketch.matrix(name, g.numel()).double() @ g.reshape(-1).double() for name, g in grads.items())
        torch.testing.assert_close(torch.tensor(result.embedding, dtype=torch.float64), unit(dense),
                                   rtol=0, atol=2e-5)
        full.append(unit(torch.cat([g.reshape(-1) for g in grads.values()])))
        sketched.append(unit(dense))
    assert len(results) >= 6
    # the first three are the target, the rest are scored: LESS's cosine against the mean target direction
    stored = torch.tensor([result.embedding for result in results], dtype=torch.float64)
    target = unit(stored[:3].mean(0))
    scores = stored[3:] @ target
    torch.testing.assert_close(scores, torch.stack(sketched[3:]) @ unit(torch.stack(sketched[:3]).mean(0)),
                               rtol=0, atol=5e-5)
    # the sketch is lossy but close here: 8,192 buckets for a few thousand LoRA coordinates
    direct = torch.stack(full[3:]) @ unit(torch.stack(full[:3]).mean(0))
    n_parameters = sum(g.numel() for g in grads.values())
    assert n_parameters < config.sketch_dim
    assert float((scores - direct).abs().max()) < 0.05, (scores, direct)


def test_loss_is_the_response_only_nll(info, config):
    scorer = LessFeatureScorer(config, info)
    loaded = scorer.loaded
    tokenizer = info.tokenizer
    prompt = tokenizer("w1 w2 w3 w4 w5").input_ids
    response = tokenizer("w10 w11 w12 w13", add_special_tokens=False).input_ids
    ids = torch.tensor([prompt + response])
    with torch.no_grad():
        log_probs = torch.log_softmax(loaded.model(input_ids=ids).logits[0].double(), -1)
        loss = float(response_loss(loaded, prompt, response))
    targets = range(len(prompt), len(prompt) + len(response))
    by_hand = -sum(float(log_probs[t - 1, ids[0, t]]) for t in targets) / len(response)
    everything = -sum(float(log_probs[t - 1, ids[0, t]]) for t in range(1, ids.shape[1])) / (ids.shape[1] - 1)
    assert loss == pytest.approx(by_hand, abs=1e-6)
    assert abs(loss - everything) > 1e-3  # prompt tokens are context, never targets
    # a prompt that fills the window leaves nothing to score: excluded, never a feature of the prompt alone
    long_prompt = " ".join(f"w{i}" for i in range(MAX_LENGTH))
    (result,) = scorer.score([CandidateText("long", long_prompt, "", "w1 w2")])
    assert (result.embedding, result.excluded_reason) == (None, PROMPT_FILLS_WINDOW)


def write_target(path, candidates: list[dict]) -> TargetFile:
    path.write_bytes(b"\n".join(orjson.dumps({k: c[k] for k in ("instruction", "input", "response")})
                                for c in candidates))
    return TargetFile.of(path, target_max=3)


def score_less(db, scorer: LessFeatureScorer, target: TargetFile):
    """The score stage with this scorer against `target`: the features, then the target's run (a LessSummary)."""
    spec = LessSpec(model=ModelSpec(path="tiny"), target=str(target.path), target_max=target.target_max)
    done = score(ScoreRequest(spec, scorer=scorer), RunContext(db, load_settings()))
    done.target.features = done.scoring
    return done.target


def test_stored_scores_resume_and_a_new_target_reuses_every_feature(db, tmp_path, info, config):
    candidates = mixed_candidates()
    append_candidates(db, candidates)
    scorer = LessFeatureScorer(config, info)
    target = write_target(tmp_path / "target.jsonl", mixed_candidates(seed=11, prefix="t")[8:])

    first = score_less(db, scorer, target)
    assert first.features.n_processed == len(candidates) and first.target_computed
    assert first.n_scores_written == len(candidates)
    stored = stored_target(db, first.target["target_fingerprint"])
    assert stored["n_examples"] == 3
    scores = db.execute(
        "select m.candidate_id, m.score, m.excluded_reason, g.feature from method_scores m join gradient_features g "
        "using (candidate_id) where m.method = 'less'").df()
    aggregate = torch.tensor(stored["aggregate"], dtype=torch.float64)
    for row in scores.itertuples():
        if pd.isna(row.excluded_reason):
            assert row.score == pytest.approx(float(torch.tensor(row.feature, dtype=torch.float64) @ aggregate),
                                              abs=1e-6)
        else:
            assert pd.isna(row.score)
    assert set(scores["excluded_reason"].dropna()) == {PROMPT_FILLS_WINDOW}

    again = score_less(db, scorer, target)
    assert (again.features.n_processed, again.target_computed, again.n_scores_written) == (0, False, 0)
    other = score_less(db, scorer, write_target(tmp_path / "other.jsonl", mixed_candidates(seed=12, prefix="u")))
    assert (other.features.n_processed, other.target_computed, other.n_scores_written) == (0, True, len(candidates))

    key = resolve_scoring_key(db, config_hash=first.target["target_fingerprint"], method="less")
    selection = build_selection(db, SelectionParams(budget="3", method="less"), key)
    eligible_scores = scores[scores["excluded_reason"].isna()].sort_values(["score", "candidate_id"],
                                                                        ascending=[False, True])
    assert selection.members["candidate_id"].tolist() == eligible_scores["candidate_id"].head(3).tolist()
