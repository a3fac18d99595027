"""`capsel selections`: list every published selection."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from capsel.cli.common import DbOption, JsonOption, console, json_output, read_store, settings_for
from capsel.cli.tables import print_table
from capsel.methods.registry import all_methods
from capsel.publish.destination import destination, is_present
from capsel.terminal_text import TextTable, markup

if TYPE_CHECKING:
    from capsel.publish.reconcile import Reconciled


def selections(json_out: JsonOption = False, db: DbOption = None) -> None:
    """List published selections, newest first (a path marked missing was moved or deleted).

    Publishes a kill left unfinished are finished or undone first, and said so.
    """
    from capsel.db.records import fetch_records  # duckdb: not for --help

    settings = settings_for(db)
    reconciled = _reconcile_if_needed(settings.db_path)
    with read_store(settings.db_path) as con:
        rows = fetch_records(con, "publish/selections_list")
    with json_output(json_out) as output:
        output.emit({"selections": [{**row, "present": is_present(destination(row["out_dir"]))} for row in rows],
                     "reconciled": reconciled.as_dict()})
        for line in reconciled.lines():
            console.print(markup("[yellow]reconcile:[/] {}", line))
        print_selections(rows)


def _reconcile_if_needed(db_path: Path) -> Reconciled:
    from capsel.db import open_db
    from capsel.publish.reconcile import find_disagreements, reconcile_selections  # pandas: not for --help

    # a listing opens the store read-only; only a store that needs repair is opened to write
    with read_store(db_path) as con:
        found = find_disagreements(con)
        if not found:
            return found  # nothing to repair; what it left alone is still worth saying
    con = open_db(db_path, must_exist=True)
    try:
        return reconcile_selections(con)
    finally:
        con.close()


def print_selections(rows: list[dict]) -> None:
    """The selections as a table, with a hint when there are none."""
    if not rows:
        console.print("no selections published yet; run `capsel select`")
        return
    table = TextTable(title=f"{len(rows)} published selection(s)")
    for name in ("selection", "method", "budget", "members", "model", "config", "created (UTC)", "path"):
        table.add_column(name, justify="right" if name == "members" else "left")
    for row in rows:
        budget = f"{row['budget']} {row['budget_mode'].replace('_', ' ')}"
        # a method no longer installed (a plugin) still lists, without its seed
        declared = all_methods().get(row["method"])
        if declared is not None and declared.selector.seeded:
            budget += f", seed {row['seed']}"
        path = row["out_dir"] if is_present(destination(row["out_dir"])) else f"{row['out_dir']} (missing)"
        table.add_row(
            row["selection_id"], row["method"], budget, str(row["n_members"]),
            row["model_fingerprint"] or "-", row["config_hash"] or "-",
            f"{row['created_at']:%Y-%m-%d %H:%M:%S}", path,
        )
    print_table(console, table)
