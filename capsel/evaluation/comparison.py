"""Evaluation metrics side by side: each selection method (and budget) against the base model and the full pool."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import duckdb
import pandas as pd
from matplotlib.figure import Figure

from capsel.db.records import fetch_records
from capsel.evaluation.method_label import BASE_LABEL, method_label


def metric_rows(con: duckdb.DuckDBPyConnection, targets: Sequence[str]) -> pd.DataFrame:
    """Overall metrics of the targets, one row per target, evaluation and metric, with a method label."""
    rows = pd.DataFrame(fetch_records(con, "evaluation/evaluations_of_targets", {"targets": list(targets)}))
    if rows.empty:
        return pd.DataFrame(columns=["target", "selection_id", "method", "budget", "seed", "eval_spec", "metric",
                                     "value", "n", "label"])
    rows["label"] = [method_label(row) for row in rows.to_dict(orient="records")]
    return rows.drop(columns=["ppl_guard", "ppl_guard_z", "late"])


def by_method(rows: pd.DataFrame) -> pd.DataFrame:
    """Mean, sample std and seed count of each metric per method label (the base model and full pool included)."""
    if rows.empty:
        return pd.DataFrame(columns=["eval_spec", "metric", "label", "mean", "std", "n_seeds"])
    grouped = rows.groupby(["eval_spec", "metric", "label"], sort=True)["value"]
    table = grouped.agg(mean="mean", std="std", n_seeds="count").reset_index()
    table["std"] = table["std"].fillna(0.0)
    return table


def comparison_figure(table: pd.DataFrame, size_per_panel: tuple[float, float] = (5.5, 3.2)) -> Figure:
    """One panel per evaluation metric: a bar (mean ± std over seeds) per method, the base model as a line."""
    panels = list(table.groupby(["eval_spec", "metric"], sort=True))
    figure = Figure(figsize=(size_per_panel[0], size_per_panel[1] * max(1, len(panels))), layout="constrained")
    for index, ((eval_spec, metric), group) in enumerate(panels):
        axes = figure.add_subplot(max(1, len(panels)), 1, index + 1)
        methods = group[group["label"] != BASE_LABEL]
        axes.bar(methods["label"], methods["mean"], yerr=methods["std"], capsize=4, color="tab:blue")
        base = group[group["label"] == BASE_LABEL]
        if not base.empty:
            axes.axhline(float(base["mean"].iloc[0]), color="tab:red", linestyle="--", label=BASE_LABEL)
            axes.legend(loc="best", fontsize=8)
        kind, _, path = str(eval_spec).partition(":")
        axes.set_title(f"{kind}:{Path(path).name}: {metric}", fontsize=9, parse_math=False)  # a file name: never TeX
        axes.set_ylabel(metric)
        # differences between methods are small next to the metric itself: show the range they span
        values = [*(methods["mean"] - methods["std"]), *(methods["mean"] + methods["std"]), *base["mean"]]
        if values:
            low, high = min(values), max(values)
            margin = (high - low) * 0.15 or abs(high) * 0.01 or 0.01
            axes.set_ylim(low - margin, high + margin)
        for position, mean in enumerate(methods["mean"]):
            axes.annotate(f"{mean:.4g}", (position, mean), ha="center", va="bottom", fontsize=7)
        axes.tick_params(axis="x", labelrotation=30, labelsize=8)
    return figure
