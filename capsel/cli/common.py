"""Options and helpers shared by every CLI command: settings, consoles, JSON output, interruption."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Iterator, NoReturn, Optional

import orjson
import typer
from rich.console import Console

from capsel.errors import CapselError
from capsel.safe_text import json_text

if TYPE_CHECKING:
    import duckdb

    from capsel.config import Settings


class StdoutClosed(SystemExit):
    """stdout's reader went away (`capsel ... | head`): exit 1 quietly, as rich does, unless the work was
    committed (capsel.cli.after_commit then says so and exits as the work did)."""


class _Console(Console):
    def on_broken_pipe(self) -> None:
        # rich's own handling (stdout to /dev/null, the console quiet), with an exit after_commit can tell apart
        try:
            super().on_broken_pipe()
        except SystemExit:
            raise StdoutClosed(1) from None


console = _Console()
err_console = _Console(stderr=True)

DbOption = Annotated[
    Optional[Path],
    typer.Option("--db", help="DuckDB file (default: $CAPSEL_DB_PATH or ./capsel.duckdb).", show_default=False),
]
# one --license for `capsel select` and `capsel flow select|rescore` (unset: the flow config's, else the default)
JsonOption = Annotated[bool, typer.Option(
    "--json", help="Print one JSON object with the result on stdout instead of tables and progress; errors stay "
    "on stderr (and as {\"ok\": false, ...} on stdout).",
)]


class Interrupted(Exception):
    """Ctrl-C or SIGTERM during a command; the message says what was kept (click alone would exit 1)."""


def settings_for(db: Path | None = None, **overrides: object) -> Settings:
    """Settings with the command's explicit options applied on top of env and .env."""
    from capsel.config import load_settings  # pydantic-settings loads for a command that runs, not for --help

    return load_settings(db_path=db, **overrides)


@contextmanager
def read_store(db_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """The store at `db_path` opened read-only (a missing file is an error, not a new empty store), closed however
    the block ends."""
    from capsel.db import open_db  # duckdb loads for the commands that read the store, not for every --help

    con = open_db(db_path, read_only=True)
    try:
        yield con
    finally:
        con.close()


def print_json(payload: object) -> None:
    """One JSON document on stdout: paths, timestamps and other non-JSON values as their text; the control
    characters of names (bidi overrides, C1) as escapes, so the document is safe to read in a terminal too."""
    sys.stdout.write(json_text(orjson.dumps(
        payload, default=str, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY,
    ).decode()) + "\n")
    sys.stdout.flush()


class JsonReport:
    """Where a command hands its result: one JSON object on stdout with --json, nothing otherwise."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def emit(self, payload: dict) -> None:
        """The run's result, as {"ok": true, ...}."""
        if self.enabled:
            print_json({"ok": True, **payload})

    def fail(self, error: CapselError, payload: dict) -> NoReturn:
        """A problem found once the work was done: the result goes out as {"ok": false, ...}, then the error."""
        if self.enabled:
            from capsel.cli.flags import flag

            print_json({"ok": False, "error": error.render(flag), "exit_code": int(error.exit_code), **payload})
            error.json_reported = True  # type: ignore[attr-defined]
        raise error


@contextmanager
def json_output(enabled: bool) -> Iterator[JsonReport]:
    """With --json the console goes quiet (tables, notes, progress) while the command runs."""
    was_quiet = console.quiet
    console.quiet = enabled or was_quiet
    try:
        yield JsonReport(enabled)
    finally:
        console.quiet = was_quiet


def checked_model_name(value: str | None) -> str | None:
    """--model's check: a slip of an installed model's name is answered at once, before any model code loads."""
    from capsel.models.installed import is_install_name, near_install_name

    if value is None or "/" in value or Path(value).expanduser().exists():
        return value
    if not is_install_name(value) and (near := near_install_name(value)):
        # a missing model, like a missing file, is bad input: one `error:` line, exit 3
        raise CapselError(f"no model named {value!r}: did you mean {near!r}? (`capsel models list` shows the "
                          "models capsel installs)")
    return value
