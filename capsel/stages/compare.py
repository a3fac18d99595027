"""Stage: select with every scored method under one budget, compare the selections and write the report."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from capsel.baselines.registry import Order
from capsel.compare.contenders import Comparison, gather
from capsel.compare.report import summaries, write_report
from capsel.selection.budget import Budget
from capsel.stages.context import RunContext


@dataclass(frozen=True)
class CompareRequest:
    """The per-domain budget, the random control's seed, which PPL band, and the report folder."""

    budget: Budget
    out_dir: Path
    seed: int = 0
    ppl_order: Order = "high"


@dataclass
class CompareSummary:
    """The selections compared, the report's numbers (overlap, correlations, medians) and the files written."""

    comparison: Comparison
    numbers: dict
    files: list[Path]
    title: str


def compare(request: CompareRequest, ctx: RunContext) -> CompareSummary:
    """Nothing is published: the report (PNGs, compare.json, index.html) goes to `out_dir`."""
    comparison = gather(ctx.con, request.budget, request.seed, request.ppl_order)
    numbers = summaries(comparison)
    title = f"capsel compare, budget {request.budget.text} per domain"
    return CompareSummary(comparison, numbers, write_report(request.out_dir, comparison, numbers, title), title)
