"""Entry point: registers the subcommands and turns CapselError into a clean message."""

from __future__ import annotations

import functools
import sys
from importlib import import_module

import typer

from capsel import __version__
from capsel.cli.common import err_console
from capsel.errors import CapselError

# Command name -> (module, function); a bare module name is one in capsel.cli. Modules load only for the
# command being run: the scoring, lab and report commands import torch, transformers and matplotlib
# (seconds and ~450 MB per process), which `capsel ingest` or `capsel status` never use.
COMMANDS: dict[str, tuple[str, str]] = {
    # the demo measures junk with the lab's labels, so it lives with the lab
    "demo": ("capsel_lab.cli.demo", "demo"),
    "ingest": ("ingest", "ingest"),
    "status": ("status", "status"),
    "generate": ("generate", "generate"),
    "score": ("score", "score"),
    "score-baseline": ("score_baseline", "score_baseline"),
    "export-scores": ("export_scores", "export_scores"),
    "select": ("select", "select"),
    "selections": ("selections", "selections"),
    "compare": ("compare", "compare"),
    "lineage": ("lineage", "lineage"),
    "migrate": ("migrate", "migrate"),
    "profile": ("profile", "profile"),
}
GROUPS = ("flow", "lab", "models")


def _version(value: bool) -> None:
    if value:
        print(f"capsel {__version__}")
        raise typer.Exit()


def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """capsel: model-aware SFT data selection."""


# the lab's commands live with the lab (capsel_lab), which the product never imports to select or score
GROUP_MODULES = {"flow": "capsel.cli.flow", "lab": "capsel_lab.cli.lab", "models": "capsel.cli.models"}


@functools.cache
def _group(name: str) -> typer.Typer:
    return import_module(GROUP_MODULES[name]).app


@functools.cache
def build_app(only: str | None = None) -> typer.Typer:
    """The CLI with every command, or with `only` that command (same function, options and help)."""
    app = typer.Typer(
        name="capsel",
        help="Select SFT data with CAP (Counterfactual Assimilation Profile): ingest, score, select, publish.",
        no_args_is_help=True,
        pretty_exceptions_show_locals=False,
        rich_markup_mode="rich",
    )
    app.callback()(_root)
    for name, (module, function) in COMMANDS.items():
        if only in (None, name):
            path = module if "." in module else f"capsel.cli.{module}"
            app.command(name)(getattr(import_module(path), function))
    for name in GROUPS:
        if only in (None, name):
            app.add_typer(_group(name), name=name)
    return app


def __getattr__(name: str) -> typer.Typer:
    # `from capsel.cli.main import app` (tests, typer's CliRunner) gets the full CLI.
    if name == "app":
        return build_app()
    raise AttributeError(name)


def _requested_command(args: list[str]) -> str | None:
    first = next((arg for arg in args if not arg.startswith("-")), None)
    return first if first in COMMANDS or first in GROUPS else None


def main() -> None:
    """Run the CLI; user errors print one clear line and exit with status 2."""
    try:
        build_app(_requested_command(sys.argv[1:]))()
    except CapselError as exc:
        from rich.markup import escape

        from capsel.cli.flags import flag

        err_console.print(f"[bold red]error:[/] {escape(exc.render(flag))}", highlight=False)
        sys.exit(2)
