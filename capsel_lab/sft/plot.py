"""The SFT budget curve: held-out accuracy per budget for CAP and random (mean ± std), full pool and base as lines."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt

from capsel_lab.figure import save_figure

STYLES = {"cap": ("tab:blue", "CAP top"), "random": ("tab:gray", "random")}
LINES = {"all": ("tab:green", "full pool"), "base model": ("tab:red", "base model (no SFT)")}


def plot_budget_curve(table: list[dict], budgets: Sequence[str], path: Path, title: str = "") -> Path:
    """Accuracy against budget; reference rows (full pool, base model) as horizontal lines."""
    fig, axis = plt.subplots(figsize=(6.0, 4.0), dpi=110)
    positions = range(len(budgets))
    for method, (colour, label) in STYLES.items():
        rows = {row["budget"]: row for row in table if row["method"] == method}
        means = [rows[b]["accuracy_mean"] for b in budgets]
        stds = [rows[b]["accuracy_std"] for b in budgets]
        axis.errorbar(positions, means, yerr=stds, marker="o", capsize=4, color=colour, label=label)
    for row in table:
        if row["method"] in LINES:
            colour, label = LINES[row["method"]]
            axis.axhline(row["accuracy_mean"], color=colour, linestyle="--", label=label)
    axis.set_xticks(list(positions), [f"{b} per domain" for b in budgets])
    axis.set_xlabel("SFT budget")
    axis.set_ylabel("held-out accuracy")
    axis.legend(fontsize=8)
    return save_figure(fig, path, title)
