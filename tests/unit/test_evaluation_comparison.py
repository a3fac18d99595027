"""A comparison of methods: labels that tell selections apart, mean and std over seeds, the plot."""

from __future__ import annotations

import pandas as pd
import pytest

from capsel.evaluation.comparison import by_method, comparison_figure
from capsel.evaluation.method_label import method_label

NONE = {"ppl_guard": None, "ppl_guard_z": None, "late": None}


def test_labels_name_the_method_budget_and_what_else_set_the_selection_apart():
    assert method_label({"method": None, "budget": None, **NONE}) == "base model"
    assert method_label({"method": "random", "budget": "100%", **NONE}) == "full pool"
    assert method_label({"method": "cap", "budget": "10%", **NONE}) == "cap 10%"
    assert method_label({"method": "cap", "budget": "10%", **NONE, "ppl_guard_z": "3.5"}) == "cap 10% (PPL guard z 3.5)"
    assert method_label({"method": "cap", "budget": "10%", **NONE, "ppl_guard": "95.0", "late": "last:3"}) == \
        "cap 10% (PPL guard 95.0, late last:3)"


def test_by_method_is_mean_and_sample_std_over_seeds():
    rows = pd.DataFrame({"eval_spec": "loss:h.jsonl", "metric": "loss", "label": ["cap 10%"] * 3 + ["base model"],
                         "value": [1.0, 2.0, 4.0, 3.0]})
    table = by_method(rows).set_index("label")
    assert table.loc["cap 10%", "mean"] == pytest.approx(7 / 3)
    assert table.loc["cap 10%", "std"] == pytest.approx(pd.Series([1.0, 2.0, 4.0]).std(ddof=1))
    assert table.loc["base model", "std"] == 0.0 and table.loc["cap 10%", "n_seeds"] == 3
    figure = comparison_figure(by_method(rows))
    assert len(figure.axes) == 1 and figure.axes[0].get_title() == "loss:h.jsonl: loss"
