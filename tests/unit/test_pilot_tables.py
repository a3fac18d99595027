"""The pilot's tables as the READMEs render them from a committed pilot.json: every cell from its own field."""

from __future__ import annotations

from capsel_lab.result_tables import pilot_comparisons, pilot_decisions

RESULT = {
    "spec": {"model": "smollm2-135m-instruct", "pool": "/x/gsm8k_train.jsonl"},
    "decisions": [{"budget": "5%", "recommended": None, "p": 0.31, "p_adjusted": 0.9, "p_floor": 0.001,
                   "evidence": {"method": "cap", "mean_delta": -0.0123, "ci95": [-0.03, 0.004]}}],
    "comparisons": [{"budget": "5%", "method": "cap", "mean_delta": -0.0123, "p_adjusted": 0.9,
                     "hierarchical": {"ci95": [-0.03, 0.004], "p": 0.31},
                     "sign_test": {"p": 0.5, "p_floor": 0.5},
                     "replicates": [{"rank": 2, "of": 6}, {"rank": 4, "of": 6}]}],
}


def test_the_decision_row_names_the_pilot_the_budget_and_each_p():
    rows = pilot_decisions([RESULT]).splitlines()
    assert rows[2] == ("| SmolLM2-135M-Instruct on gsm8k_train.jsonl | 5% | none | cap -0.0123 [-0.0300, +0.0040] | "
                       "0.3100 | 0.9000 | 0.0010 |")


def test_the_comparison_row_has_the_interval_the_sign_tests_floor_and_the_ranks():
    rows = pilot_comparisons([RESULT]).splitlines()
    assert rows[2] == ("| SmolLM2-135M-Instruct on gsm8k_train.jsonl | 5% | cap | -0.0123 | [-0.0300, +0.0040] | "
                       "0.3100 | 0.9000 | 0.500 (floor 0.500) | 2/6, 4/6 |")
