"""The pilot's statistics against naive recomputations (tests/reference/naive_pilot.py) on made-up outcomes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from capsel.pilot.statistics import (
    NO_METHOD,
    Unit,
    compare_with_random,
    decisions,
    hierarchical_bootstrap,
    holm,
    median_draw,
    sign_test,
    units,
)
from tests.reference import naive_pilot


def made_up(rng: np.random.Generator, n_rows: int, n_seeds: int, shift: float) -> tuple[np.ndarray, np.ndarray]:
    weights = rng.integers(5, 40, n_rows).astype(float)
    outcomes = weights[:, None] * (1.2 + shift + rng.normal(0, 0.3, (n_rows, n_seeds)))
    return outcomes, weights


@pytest.mark.parametrize("n_seeds", [1, 2, 3])
def test_the_hierarchical_bootstrap_is_the_naive_loops(n_seeds):
    rng = np.random.default_rng(5)
    pairs, naive_pairs = [], []
    for shift in (-0.05, -0.02, 0.01):
        ours, weights = made_up(rng, 9, n_seeds, shift)
        theirs = weights[:, None] * (1.2 + rng.normal(0, 0.3, (9, n_seeds)))
        pairs.append((Unit("m", ours, weights), Unit("r", theirs, weights)))
        naive_pairs.append((ours.tolist(), theirs.tolist(), weights.tolist()))
    found = hierarchical_bootstrap(pairs, resamples=300, seed=3)
    low, high, p = naive_pilot.hierarchical(naive_pairs, resamples=300, seed=3)
    assert found["ci95"] == pytest.approx([low, high], abs=1e-12)
    assert found["p"] == pytest.approx(p, abs=1e-12) and found["p_floor"] == pytest.approx(2 / 301)


def test_holm_is_the_step_down_adjustment():
    p = [0.01, 0.04, 0.03, 0.005, 0.9]
    assert holm(p) == pytest.approx(naive_pilot.holm(p))
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_the_median_draw_and_the_sign_tests_floor():
    draws = [Unit(f"d{i}", np.array([[value]]), np.array([1.0])) for i, value in enumerate([3.0, 1.0, 2.0, 5.0, 4.0])]
    median, values = median_draw(draws)
    assert median.name == "d0" and values == [1.0, 2.0, 3.0, 4.0, 5.0]  # the value 3
    assert median_draw(draws[:4])[0].name == "d2"  # of 3, 1, 2, 5 the lower middle: 2
    assert sign_test([-1.0, -2.0, -0.5])["p"] == pytest.approx(0.25) and sign_test([-1.0] * 3)["p_floor"] == 0.25
    assert sign_test([-1.0] * 6)["p_floor"] == pytest.approx(0.03125)


def rows_of(values: dict[str, float], n_rows: int = 6) -> pd.DataFrame:
    """Per-row outcomes whose every row has the unit's value (weight 1): a unit's value is then exact."""
    return pd.DataFrame([{"unit": unit, "seed": 0, "row": row, "outcome": value, "weight": 1.0}
                         for unit, value in values.items() for row in range(n_rows)])


def test_each_method_meets_the_median_of_its_replicates_draws_and_its_rank_among_them():
    values = {}
    for replicate, (cap, draws) in enumerate([(1.0, [1.5, 1.2, 1.9]), (1.1, [1.05, 1.3, 1.4])]):
        values[f"r{replicate}|10%|cap|d0"] = cap
        values.update({f"r{replicate}|10%|random|d{draw}": value for draw, value in enumerate(draws)})
    [comparison] = compare_with_random(units(rows_of(values)), 2, ["10%"], ["cap"], "random", 3)
    first, second = comparison["replicates"]
    assert first["random_median"] == pytest.approx(1.5) and first["delta"] == pytest.approx(-0.5)
    assert (first["rank"], first["of"]) == (1, 4) and first["random_median_unit"] == "r0|10%|random|d0"
    assert second["random_median"] == pytest.approx(1.3) and second["rank"] == 2
    assert comparison["mean_delta"] == pytest.approx((-0.5 - 0.2) / 2)
    assert comparison["p_adjusted"] == comparison["hierarchical"]["p"]  # one comparison: Holm changes nothing


def test_a_decision_names_a_method_only_where_its_lead_survives_holm():
    def comparison(budget, method, delta, p_adjusted, ci):
        return {"budget": budget, "method": method, "mean_delta": delta, "p_adjusted": p_adjusted,
                "hierarchical": {"p": p_adjusted / 2, "ci95": ci, "p_floor": 0.001},
                "sign_test": {"p": 0.25}, "replicates": [{"rank": 1}]}

    found = decisions([comparison("5%", "cap", -0.02, 0.01, [-0.03, -0.01]),
                       comparison("5%", "ppl", -0.05, 0.03, [-0.07, -0.02]),
                       comparison("20%", "cap", -0.02, 0.2, [-0.05, 0.01]),
                       comparison("20%", "ppl", 0.03, 0.01, [0.01, 0.05])])
    assert [(d["budget"], d["recommended"]) for d in found] == [("5%", "ppl"), ("20%", None)]
    assert found[1]["verdict"] == NO_METHOD  # ppl is distinguishable there, but worse than random
