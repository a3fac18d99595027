"""The real-model SFT lab's data and table: held-out rows never in the pool, mean ± std per method."""

from __future__ import annotations

import json

import pytest

from capsel_lab.real_sft.estimate import estimate
from capsel_lab.real_sft.experiment import METHODS, RealSftSpec, summarise
from capsel_lab.real_sft.pool import N_DEMONSTRATIONS, write_lab_files


def _questions(path) -> list[str]:
    return [json.loads(line).get("question") or json.loads(line)["instruction"]
            for line in path.read_text().splitlines()]


def test_heldout_and_demonstration_rows_are_disjoint_from_the_pool(tmp_path):
    files = write_lab_files(tmp_path, n_pool=30, n_heldout=12, junk_share=0.1, seed=3)
    pool = [json.loads(line) for line in files.pool.read_text().splitlines()]
    clean = {row["instruction"] for row in pool if row["lab_label"] == "clean"}
    assert len(clean) == 30 and sum(row["lab_label"] == "junk" for row in pool) == 3
    heldout, demos = _questions(files.heldout), _questions(files.demos)
    assert len(heldout) == 12 and len(demos) == N_DEMONSTRATIONS
    assert not clean & set(heldout) and not clean & set(demos) and not set(heldout) & set(demos)
    again = write_lab_files(tmp_path / "again", n_pool=30, n_heldout=12, junk_share=0.1, seed=3)
    assert again.heldout.read_text() == files.heldout.read_text()  # the same seed draws the same rows


def test_the_table_is_mean_and_sample_std_over_seeds_per_method():
    runs = [{"method": "cap", "seed": s, "n_members": 20, "n_junk": 0, "loss:loss": v} for s, v in enumerate([1, 2, 3])]
    runs.append({"method": "base model", "seed": None, "loss:loss": 4.0})
    table = {row["method"]: row for row in summarise(runs)}
    assert table["cap"]["loss:loss"] == {"mean": 2.0, "std": 1.0} and table["cap"]["n_seeds"] == 3
    assert table["base model"]["loss:loss"] == {"mean": 4.0, "std": 0.0}
    assert list(table) == ["cap", "base model"]  # in the order the methods ran


def test_the_estimate_adds_up_its_parts():
    guess = estimate("smollm2-135m-instruct", 200, 0.05, 100, 0, 0.1, 6, 3)
    assert guess.total_s == pytest.approx(guess.scoring_s + guess.training_s + guess.evaluation_s)
    assert estimate("gemma3-270m", 200, 0.05, 100, 0, 0.1, 6, 3).total_s == pytest.approx(2.5 * guess.total_s)


def test_a_late_split_adds_one_cap_method_that_selects_with_it_and_keeps_the_others():
    plain = RealSftSpec(model="m").method_options()
    assert plain == METHODS
    split = RealSftSpec(model="m", late="last:3").method_options()
    assert split == {**METHODS, "cap, late last:3": {"method": "cap", "late": "last:3"}}
