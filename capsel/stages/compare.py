"""Stage: select with every scored method under one budget, compare the selections and write the report."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from capsel.compare.contenders import Comparison, gather
from capsel.compare.report import summaries, write_report
from capsel.db.records import fetch_records
from capsel.evaluation.comparison import by_method, metric_rows
from capsel.evaluation.paired import comparisons_among
from capsel.methods.selectors import Order
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


def evaluations_of_budget(ctx: RunContext, budget: Budget):
    """Metrics of the models fine-tuned on published selections under this budget (the full pool and the base
    models too), by method: what each selection trained, beside how much the selections overlap."""
    return by_method(metric_rows(ctx.con, _evaluated_targets(ctx, budget)))


def _evaluated_targets(ctx: RunContext, budget: Budget) -> list[str]:
    return [row["target"] for row in fetch_records(ctx.con, "evaluation/evaluation_targets_of_budget",
                                                   {"budget": budget.text})]


def compare(request: CompareRequest, ctx: RunContext) -> CompareSummary:
    """Nothing is published: the report (PNGs, compare.json, index.html) goes to `out_dir`."""
    comparison = gather(ctx.con, request.budget, request.seed, request.ppl_order)
    numbers = summaries(comparison)
    numbers["evaluations"] = evaluations_of_budget(ctx, request.budget)
    numbers["paired"] = comparisons_among(ctx.con, _evaluated_targets(ctx, request.budget))
    title = f"capsel compare, budget {request.budget.text} per domain"
    return CompareSummary(comparison, numbers, write_report(request.out_dir, comparison, numbers, title), title)
