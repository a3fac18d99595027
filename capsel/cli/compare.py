"""`capsel compare`: select with every scored method under one budget and report how the selections differ."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from capsel.cli.common import DbOption, JsonOption, console, json_output, read_store, settings_for
from capsel.cli.tables import print_table
from capsel.cli.wrapping import print_unbroken
from capsel.methods.selectors import Order
from capsel.paths import typed_or_default
from capsel.selection.budget import parse_budget
from capsel.terminal_text import TextTable, markup, plain

if TYPE_CHECKING:  # the tables are pandas frames, read after the comparison ran: --help loads no pandas
    import pandas as pd


def compare(
    budget: Annotated[str, typer.Option(
        "--budget", help="Members per domain for every method: a count like 800 or a share like 10%.")],
    out: Annotated[Optional[Path], typer.Option(
        "--out", help="Report folder (default: compare/compare-<UTC time> inside the output root).",
        show_default=False,
    )] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the random control.")] = 0,
    ppl_direction: Annotated[Order, typer.Option(
        "--ppl-direction", help="Which PPL selection to compare: high (default), low or middle band.",
    )] = "high",
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Jaccard overlap of selections, Spearman correlation of scores, per-domain length and PPL of each selection.

    Every method with results in the store takes part (CAP, ppl, ifd, qurating, kcenter) plus the
    seeded random control; nothing is published. Tables print here; PNG plots, compare.json and
    index.html go to the report folder.
    """
    settings = settings_for(db)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    directory = typed_or_default(out, settings.output_root, Path("compare") / f"compare-{stamp}")
    # the comparison loads pandas and matplotlib: --help and option checks do not
    from capsel.compare.report import report_payload
    from capsel.stages.compare import CompareRequest
    from capsel.stages.compare import compare as compare_stage
    from capsel.stages.context import RunContext

    request = CompareRequest(parse_budget(budget), directory, seed, ppl_direction)
    with json_output(json_out) as output:
        with read_store(settings.db_path) as con:
            with console.status("selecting with every scored method and writing the report"):
                compared = compare_stage(request, RunContext(con, settings))
        comparison, numbers, files = compared.comparison, compared.numbers, compared.files
        report = directory / "index.html"
        output.emit({**report_payload(comparison, numbers, compared.title), "report": report, "files": files})
        _print_tables(numbers, comparison.notes)
        print_unbroken(console, markup("report: {} ({} files)", report, len(files)))


def _print_tables(numbers: dict, notes: list[str]) -> None:
    from capsel.compare.metrics import ALL_DOMAINS

    print_table(console, _matrix_table("Jaccard overlap of selections", numbers["jaccard"]))
    if numbers["spearman"]:
        print_table(console, _matrix_table("Spearman rho of scores (mean over domains)",
                                           numbers["spearman"][ALL_DOMAINS]))
    print_table(console, _medians_table(numbers["medians"]))
    if not numbers["evaluations"].empty:
        print_table(console, _evaluations_table(numbers["evaluations"]))
    for note in notes:
        console.print(markup("[yellow]note:[/] {}", note))


def _matrix_table(title: str, matrix: pd.DataFrame) -> TextTable:
    table = TextTable(title=title, title_justify="left")
    table.add_column("")
    for column in matrix.columns:
        table.add_column(plain(column), justify="right")
    for label, row in matrix.iterrows():
        table.add_row(str(label), *("–" if _missing(value) else f"{value:.3f}" for value in row))
    return table


def _evaluations_table(evaluations: pd.DataFrame) -> TextTable:
    table = TextTable(title="What the published selections of this budget trained (mean ± std over seeds)",
                  title_justify="left")
    for name in ("eval", "metric", "method", "mean", "std", "seeds"):
        table.add_column(name, justify="left" if name in ("eval", "metric", "method") else "right")
    for row in evaluations.itertuples(index=False):
        table.add_row(row.eval_spec, row.metric, row.label, f"{row.mean:.4f}", f"{row.std:.4f}",
                      str(row.n_seeds))
    return table


def _medians_table(medians: pd.DataFrame) -> TextTable:
    table = TextTable(title="Per-domain medians of each selection", title_justify="left")
    with_images = "n_with_images" in medians  # a pool with image rows
    for name in ("domain", "method", "members", *(["with images"] if with_images else []), "response chars", "PPL"):
        table.add_column(name, justify="left" if name in ("domain", "method") else "right")
    for row in medians.itertuples(index=False):
        table.add_row(row.domain, row.method, str(row.n_members),
                      *([str(row.n_with_images)] if with_images else []), f"{row.response_chars:.0f}",
                      "–" if _missing(row.ppl) else f"{row.ppl:.4g}")
    return table


def _missing(value: object) -> bool:
    """None, NaN or pandas' NA (whose comparison has no truth value), as a frame leaves a missing number."""
    try:
        return value is None or bool(value != value)
    except TypeError:
        return True
