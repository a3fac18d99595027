"""Entry point: registers every subcommand and turns CapselError into a clean message."""

from __future__ import annotations

import sys

import typer

from capsel import __version__
from capsel.cli import (
    compare, demo, export_scores, flow, flow_baseline, generate, ingest, lab, lineage, migrate, profile, score,
    score_baseline, select, selections, status,
)
from capsel.cli.common import err_console
from capsel.errors import CapselError

app = typer.Typer(
    name="capsel",
    help="Select SFT data with CAP (Counterfactual Assimilation Profile): ingest, score, select, publish.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    rich_markup_mode="rich",
)


def _version(value: bool) -> None:
    if value:
        print(f"capsel {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """capsel: model-aware SFT data selection."""


app.command("demo")(demo.demo)
app.command("ingest")(ingest.ingest)
app.command("status")(status.status)
app.command("generate")(generate.generate)
app.command("score")(score.score)
app.command("score-baseline")(score_baseline.score_baseline)
app.command("export-scores")(export_scores.export_scores)
app.command("select")(select.select)
app.command("selections")(selections.selections)
app.command("compare")(compare.compare)
app.command("lineage")(lineage.lineage)
app.command("migrate")(migrate.migrate)
app.command("profile")(profile.profile)
flow.app.command("score-baseline")(flow_baseline.score_baseline)
app.add_typer(flow.app, name="flow")
app.add_typer(lab.app, name="lab")


def main() -> None:
    """Run the CLI; user errors print one clear line and exit with status 2."""
    try:
        app()
    except CapselError as exc:
        err_console.print(f"[bold red]error:[/] {exc}")
        sys.exit(2)
