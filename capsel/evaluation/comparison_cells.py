"""A paired comparison as the cells of a table row: one set of columns for the terminal, the evaluate flow's artifact
and the comparison report."""

from __future__ import annotations

from capsel.evaluation.paired import Comparison

COLUMNS = ("target", "method", "seeds", "eval", "domain", "metric", "value", "against", "delta", "95% CI", "n",
           "verdict")
TEXT_COLUMNS = frozenset({"target", "method", "eval", "domain", "metric", "verdict"})


def comparison_cells(row: Comparison) -> list[str]:
    """The row's cells in COLUMNS' order; the interval is signed, as the delta it bounds."""
    ci95 = "" if row.ci95 is None else f"[{row.ci95[0]:+.4f}, {row.ci95[1]:+.4f}]"
    return [row.target, row.label, str(row.seeds), row.eval, row.domain, row.metric, f"{row.value:.4f}",
            f"{row.against_value:.4f}", f"{row.delta:+.4f}", ci95, str(row.n), row.verdict]
