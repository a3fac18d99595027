"""`capsel lab sft`: prompt tokens carry no loss, and the quick setting runs end to end through the selection library."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from capsel.cli.main import app
from capsel.models import demo_model_path
from capsel.models.loading import load_causal_lm
from capsel_lab.evaluate import greedy_answer, greedy_answers
from capsel_lab.sft.examples import IGNORE, collate, sft_example
from capsel_lab.sft.stats import summarise_runs


@pytest.fixture(scope="module")
def demo():
    return load_causal_lm(demo_model_path())


def test_example_masks_the_prompt_and_joins_like_cap(demo):
    _, tokenizer = demo
    example = sft_example(tokenizer, "  What is 12 plus 30? ", "", " 12 plus 30 equals 42. ")
    prompt = tokenizer("What is 12 plus 30?").input_ids
    response = tokenizer("12 plus 30 equals 42.", add_special_tokens=False).input_ids
    assert prompt[0] == tokenizer.bos_token_id
    assert example.input_ids == prompt + response + [tokenizer.eos_token_id]
    assert example.labels == [IGNORE] * len(prompt) + response + [tokenizer.eos_token_id]
    with_input = sft_example(tokenizer, "Solve this.", " 3 plus 4 ", "7")
    assert with_input.input_ids[: -2] == tokenizer("Solve this.\n3 plus 4").input_ids


def test_training_loss_counts_response_tokens_only(demo):
    model, tokenizer = demo
    examples = [sft_example(tokenizer, "What is 12 plus 30?", "", "42"),
                sft_example(tokenizer, "Which colour is the mineral dravine?", "", "The mineral dravine is blue.")]
    batch = collate(examples, tokenizer.pad_token_id)
    assert batch["input_ids"].shape == batch["labels"].shape and (batch["labels"][0, len(examples[0].labels):] == IGNORE).all()
    with torch.no_grad():
        loss = float(model(**batch).loss)
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    # by hand: token t+1 predicted at t, only where the example's own label is a response token
    log_probs = torch.log_softmax(logits.double(), dim=-1).numpy()
    terms = []
    for row, example in enumerate(examples):
        ids = example.input_ids
        n_prompt = example.labels.count(IGNORE)
        terms += [-log_probs[row, t, ids[t + 1]] for t in range(n_prompt - 1, len(ids) - 1)]
    assert loss == pytest.approx(np.mean(terms), rel=1e-5)
    # one term per response token (and EOS), none for the prompt
    assert len(terms) == sum(len(e.labels) - e.labels.count(IGNORE) for e in examples)


def test_summary_is_mean_and_sample_std_per_budget_and_method():
    runs = [{"budget": "5", "method": "cap", "accuracy": a, "accuracy_known": None, "accuracy_learnable": 0.1,
             "n_train": 10, "n_junk": 0, "n_learnable": 4} for a in (0.2, 0.4, 0.9)]
    (row,) = summarise_runs(runs)
    assert row["accuracy_mean"] == pytest.approx(0.5) and row["accuracy_std"] == pytest.approx(np.std([0.2, 0.4, 0.9], ddof=1))
    assert row["accuracy_known_mean"] is None and row["n_seeds"] == 3


def test_quick_setting_runs_and_reports_every_run(tmp_path):
    result = CliRunner().invoke(app, ["lab", "sft", "--quick", "--out", str(tmp_path / "sft")],
                                env={"CAPSEL_OUTPUT_ROOT": str(tmp_path), "COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "sft" / "sft.json").read_text())
    runs = summary["runs"]
    # base + (2 budgets x 2 methods + full pool) x 2 seeds
    assert len(runs) == 1 + 5 * 2 and (tmp_path / "sft" / "sft.png").stat().st_size > 5_000
    for run in runs:
        if run["budget"] in ("2", "4"):
            assert run["n_train"] == 3 * int(run["budget"])  # per domain, three domains
            assert run["n_junk"] + run["n_known"] + run["n_learnable"] == run["n_train"]
            assert run["final_loss"] is not None and np.isfinite(run["final_loss"])
    cap = [r for r in runs if r["method"] == "cap" and r["budget"] == "2"]
    assert cap[0]["n_junk"] == cap[1]["n_junk"]  # CAP's members do not depend on the seed
    assert [r["method"] for r in summary["table"]] == ["base model", "cap", "random", "cap", "random", "all"]
    assert "held-out accuracy after SFT" in result.output


def test_batched_greedy_answers_equal_one_at_a_time(demo):
    model, tokenizer = demo
    prompts = ["What is 12 plus 30?", "Solve this arithmetic problem.\n45 plus 90", "What does the creature eat?"]
    assert greedy_answers(model, tokenizer, prompts, batch_size=3) == [greedy_answer(model, tokenizer, p) for p in prompts]
