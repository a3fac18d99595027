"""QuRating-style rater: a tiny random classifier's logits, read back exactly as a direct forward gives them."""

from __future__ import annotations

import pytest
import torch
import transformers as tf

from capsel.cap_engine.inputs import CandidateText
from capsel.cli.specs import build_spec, spec_values
from capsel.db import open_db
from capsel.errors import CapselError
from capsel.methods.qurating import QuratingSpec
from capsel.methods.qurating.scorer import qurating_scorer
from capsel.methods.spec import LocalModelSpec
from capsel.runner.job import run_scorer
from capsel.scorers.example_text import example_text
from tests.fixtures.candidates import mixed_candidates
from tests.fixtures.pool import append_candidates
from tests.fixtures.tiny_aux_models import RATER_LABELS, save_rater_dir


@pytest.fixture(scope="module")
def rater_dir(tmp_path_factory):
    return save_rater_dir(tmp_path_factory.mktemp("rater") / "rater")


def direct_logits(rater_dir, texts: list[str], max_length: int = 512) -> torch.Tensor:
    """One unpadded forward per text, straight through transformers."""
    tokenizer = tf.AutoTokenizer.from_pretrained(rater_dir)
    model = tf.AutoModelForSequenceClassification.from_pretrained(rater_dir).eval()
    rows = []
    with torch.no_grad():
        for text in texts:
            ids = tokenizer(text, truncation=True, max_length=max_length, return_tensors="pt").input_ids
            rows.append(model(input_ids=ids).logits[0])
    return torch.stack(rows)


def test_scores_are_the_educational_value_logit_of_a_direct_forward(rater_dir):
    scorer = qurating_scorer(QuratingSpec(rater=LocalModelSpec(path=str(rater_dir), device="cpu"), batch_size=5))
    long = CandidateText("long", " ".join(f"w{i % 1000}" for i in range(450)), "w7 w8",
                         " ".join(f"w{i}" for i in range(200)))
    candidates = [long, *(CandidateText(**c) for c in mixed_candidates())]  # from 2 to over 512 tokens
    results = scorer.score(candidates)
    texts = [example_text(c) for c in candidates]
    assert texts[0] == (long.instruction.strip() + "\n" + long.input.strip() + "\n" + long.response.strip())
    expected = direct_logits(rater_dir, texts)[:, 2]
    assert RATER_LABELS[2] == "educational_value" and scorer.config.label_index == 2
    assert [r.score for r in results] == pytest.approx(expected.tolist(), abs=1e-5)
    assert all(r.excluded_reason is None for r in results)
    assert len(scorer.tokenizer(texts[0]).input_ids) > 512  # the window really cuts


def test_another_label_and_a_missing_label(rater_dir):
    scorer = qurating_scorer(QuratingSpec(rater=LocalModelSpec(path=str(rater_dir), device="cpu"), rater_label="Writing_Style"))
    (result,) = scorer.score([CandidateText("a", "w1 w2", "", "w3 w4")])
    assert result.score == pytest.approx(float(direct_logits(rater_dir, ["w1 w2\nw3 w4"])[0, 0]), abs=1e-5)
    with pytest.raises(CapselError, match="no label 'helpfulness'.*educational_value"):
        qurating_scorer(QuratingSpec(rater=LocalModelSpec(path=str(rater_dir), device="cpu"), rater_label="helpfulness"))


def test_without_a_rater_the_error_says_what_to_provide(tmp_path):
    with pytest.raises(CapselError, match="--rater is required.*sequence classifier.*educational_value"):
        build_spec(spec_values("qurating", {"path": None}))
    with pytest.raises(CapselError, match="not a local model folder"):
        qurating_scorer(QuratingSpec(rater=LocalModelSpec(path=str(tmp_path / "nothing"))))


def test_a_rater_without_pad_token_scores_one_row_at_a_time(tmp_path):
    rater_dir = save_rater_dir(tmp_path / "nopad", seed=1, with_pad=False)
    scorer = qurating_scorer(QuratingSpec(rater=LocalModelSpec(path=str(rater_dir), device="cpu"), batch_size=4))
    candidates = [CandidateText(**c) for c in mixed_candidates()[2:6]]
    scorer.tokenizer.pad_token = None
    scorer.tokenizer.eos_token = None  # nothing to pad with: rows must run alone
    scores = [r.score for r in scorer.score(candidates)]
    expected = direct_logits(rater_dir, [example_text(c) for c in candidates])[:, 2]
    assert scores == pytest.approx(expected.tolist(), abs=1e-5)


def test_rater_scores_are_stored_once_per_rater_and_config(tmp_path, rater_dir):
    con = open_db(tmp_path / "capsel.duckdb")
    append_candidates(con, mixed_candidates())
    scorer = qurating_scorer(QuratingSpec(rater=LocalModelSpec(path=str(rater_dir), device="cpu"), batch_size=4))
    first = run_scorer(con, scorer)
    again = run_scorer(con, scorer)
    assert (first.n_processed, again.n_processed, again.n_already_done) == (14, 0, 14)
    model = con.execute("select name_or_path, architecture, n_layers from models").fetchone()
    assert model == (str(rater_dir), "LlamaForSequenceClassification", 2)
    config = con.execute("select config from scoring_configs").fetchone()[0]
    assert '"label":"educational_value"' in config.replace(" ", "") and '"max_length":512' in config.replace(" ", "")
    con.close()
