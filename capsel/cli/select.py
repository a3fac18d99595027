"""`capsel select`: pick a subset by CAP, a baseline or the seeded random control, gate it and publish it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from capsel.cli.after_commit import committed_work
from capsel.cli.common import DbOption, JsonOption, console, json_output, settings_for
from capsel.cli.model_options import OptionGroup, generated_options, validated
from capsel.cli.tables import print_table
from capsel.cli.wrapping import print_unbroken
from capsel.paths import typed_destination
from capsel.selection.params import SelectionParams
from capsel.terminal_text import TextTable, markup, plain

if TYPE_CHECKING:  # selecting and publishing load pandas and matplotlib: --help and option checks must not
    from capsel.selection.plan import Selection
    from capsel.stages.select import SelectSummary

# every selection option but --out, which here takes what its user types (any folder or a storage URL)
SELECTION_OPTIONS = OptionGroup(SelectionParams, "selection", frozenset({"out"}))


@generated_options(typed=SELECTION_OPTIONS)
def select(
    typed: dict,
    out: Annotated[str, typer.Option(
        "--out", help="Folder that receives <selection_id>/, or a storage URL (s3://bucket/prefix, credentials from "
        "the environment).",
    )],
    target: Annotated[Optional[Path], typer.Option(
        "--target", help="less only: the target file the LESS scores were computed against "
        "(`capsel score-baseline --method less --target FILE`).", show_default=False,
    )] = None,
    target_max: Annotated[Optional[int], typer.Option(
        "--target-max", min=1, show_default=False,
        help="less only: the --target-max the target was scored with (needed when several were).",
    )] = None,
    json_out: JsonOption = False,
    db: DbOption = None) -> None:
    """Select a subset under a budget, check it with the data-quality gate and publish it."""
    from capsel.db import open_db  # duckdb: not for --help
    from capsel.stages.context import RunContext
    from capsel.stages.select import SelectRequest, select_and_publish

    settings = settings_for(db)
    out_dir = typed_destination(out)
    request = validated(SelectionParams, typed, "options")
    con = open_db(settings.db_path, must_exist=True)
    with json_output(json_out) as output, committed_work() as commit:
        try:
            with _stages() as progress:
                stage = progress.add_task("selecting", total=None)
                summary = select_and_publish(
                    SelectRequest(request, out_dir, target, target_max),
                    RunContext(con, settings, on_step=lambda step: progress.update(stage, description=step)),
                )
                selection, published = summary.selection, summary.published
                commit.done(f"published {published.selection_id} with {len(selection.members)} members at "
                            f"{published.path}")
        finally:
            con.close()
        output.emit({"selection_id": published.selection_id, "path": published.path,
                     "n_members": len(selection.members), "rule": selection.rule, "notes": selection.notes,
                     "manifest": published.manifest, "reconciled": summary.reconciled.as_dict()})
        print_published(summary)


def print_published(summary: SelectSummary) -> None:
    """What the reconcile repaired, the selection's notes, its per-domain table and where it was published."""
    selection, published = summary.selection, summary.published
    for line in summary.reconciled.lines():
        console.print(markup("[yellow]reconcile:[/] {}", line))
    for note in selection.notes:
        console.print(markup("[yellow]note:[/] {}", note))
    print_table(console, _summary(selection, published.manifest))
    print_unbroken(console, markup("published [bold]{}[/] with {} members at {}", published.selection_id,
                                   len(selection.members), published.path))


def _stages() -> Progress:
    return Progress(
        TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=True,
    )


def _summary(selection: Selection, manifest: dict) -> TextTable:
    request = selection.request
    table = TextTable(title=plain(f"{request.method} selection, budget {request.parsed_budget.text}"),
                      caption=plain(selection.rule))
    fitted = bool(selection.fits)
    extra = ("alpha", "beta", "r²", "cut z") if fitted else ("excluded", "last score")
    for name in ("domain", "pool", "k", *extra):
        table.add_column(name, justify="left" if name == "domain" else "right")
    members = selection.members.groupby("domain")["score"].last()
    for entry in manifest["domains"]:
        if fitted:
            cells = [_num(entry.get(name)) for name in ("alpha", "beta", "r2", "z_cut")]
        else:
            last = members.get(entry["domain"])
            cells = [str(entry["n_excluded"]), "" if last is None or last != last else _num(float(last))]
        table.add_row(entry["domain"], str(entry["size"]), str(entry["k"]), *cells)
    return table


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.4g}"
