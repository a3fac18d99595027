"""Paired comparisons as a markdown artifact: the table and the forest plot, inline."""

from __future__ import annotations

from typing import Sequence

from capsel.evaluation.comparison_cells import COLUMNS, TEXT_COLUMNS, comparison_cells
from capsel.evaluation.forest_plot import forest_figure
from capsel.evaluation.paired import Comparison
from capsel.orchestration.summary_plots import png_markdown
from capsel.publish.report import png_bytes
from capsel.safe_text import markdown_text

DPI = 80


def paired_markdown(comparisons: Sequence[Comparison]) -> str:
    """Heading, the forest plot and one table row per target, domain and metric (names escaped: they are data)."""
    against = markdown_text(comparisons[0].reference())
    lines = [f"# Against {against}: is the difference more than noise?", "",
             "delta = value - the reference's value on the same rows; the 95% interval is a paired bootstrap "
             "over rows; a selection's seeds count as one target (each row averaged over them).", "",
             png_markdown(png_bytes(forest_figure(comparisons), DPI), "paired deltas with 95% intervals"), "",
             "| " + " | ".join(COLUMNS) + " |",
             "|" + "|".join("---" if name in TEXT_COLUMNS else "---:" for name in COLUMNS) + "|"]
    for row in comparisons:
        lines.append("| " + " | ".join(markdown_text(cell) for cell in comparison_cells(row)) + " |")
    return "\n".join(lines)
