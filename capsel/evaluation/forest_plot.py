"""A forest plot of paired comparisons: each target's delta against the reference with its 95% interval."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from matplotlib.figure import Figure

from capsel.evaluation.method_label import BASE_LABEL
from capsel.evaluation.paired import LOWER_IS_BETTER, Comparison
from capsel.evaluation.row_outcomes import OVERALL

COLOURS = {"better": "tab:green", "worse": "tab:red", "indistinguishable": "tab:grey"}


def forest_figure(comparisons: Sequence[Comparison], width: float = 8.0) -> Figure:
    """One panel per evaluation and metric (overall rows): a point at each delta, a bar for its interval, 0 marked."""
    overall = [c for c in comparisons if c.domain == OVERALL]
    panels: dict[tuple[str, str], list[Comparison]] = {}
    for comparison in overall:
        panels.setdefault((comparison.eval, comparison.metric), []).append(comparison)
    heights = [1.0 + 0.5 * len(rows) for rows in panels.values()] or [1.5]
    figure = Figure(figsize=(width, sum(heights) + 0.4), layout="constrained")
    grid = figure.add_gridspec(max(1, len(panels)), 1, height_ratios=heights)
    for index, ((eval_text, metric), rows) in enumerate(sorted(panels.items())):
        axes = figure.add_subplot(grid[index])
        for position, row in enumerate(rows):
            low, high = row.ci95 if row.ci95 is not None else (row.delta, row.delta)
            colour = COLOURS[row.verdict]
            axes.plot([low, high], [position, position], color=colour, linewidth=2)
            axes.plot([row.delta], [position], "o", color=colour)
        axes.axvline(0.0, color="black", linewidth=0.8, linestyle="--")
        axes.set_yticks(range(len(rows)), [_label(row) for row in rows])
        for label in axes.get_yticklabels():
            label.set_parse_math(False)  # target names are data, never TeX
        axes.invert_yaxis()
        better = "lower is better" if metric in LOWER_IS_BETTER else "higher is better"
        axes.set_xlabel(f"{metric} - {rows[0].reference()}'s ({better})", parse_math=False)
        axes.set_title(f"{Path(eval_text.partition(':')[2]).name or eval_text}: {metric}, paired bootstrap 95% CI",
                       fontsize=9, parse_math=False)
    return figure


def _label(row: Comparison) -> str:
    # what selected the rows first, the id under it (a base model's id already says what it is)
    seeds = f", {row.seeds} seeds" if row.seeds > 1 else ""
    if row.label in ("", BASE_LABEL):
        return f"{row.target}{seeds}"
    return f"{row.label}{seeds}\n{row.target}"
