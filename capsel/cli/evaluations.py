"""`capsel evaluations`: every stored evaluation metric, with the selection and method behind each model."""

from __future__ import annotations

from capsel.cli.common import DbOption, JsonOption, console, json_output, settings_for
from capsel.cli.tables import print_table
from capsel.db import open_db
from capsel.db.records import fetch_records
from capsel.terminal_text import TextTable


def evaluations(json_out: JsonOption = False, db: DbOption = None) -> None:
    """List stored evaluations (held-out loss per domain, harness metrics), newest first."""
    settings = settings_for(db)
    con = open_db(settings.db_path, read_only=True, must_exist=True)
    try:
        rows = fetch_records(con, "evaluation/evaluations_list")
    finally:
        con.close()
    with json_output(json_out) as output:
        output.emit({"evaluations": rows})
        if not rows:
            console.print("no evaluations yet: `capsel evaluate TARGET --eval loss:FILE` makes one")
            return
        print_table(console, _table(rows))


def _table(rows: list[dict]) -> TextTable:
    table = TextTable(title="evaluations, newest first")
    names = ("target", "selection", "method", "budget", "seed", "eval", "domain", "metric", "value", "n")
    for name in names:
        table.add_column(name, justify="right" if name in ("seed", "value", "n") else "left")
    for row in rows:
        cells = [row["target"], row["selection_id"], row["method"], row["budget"], row["seed"], row["eval_spec"],
                 row["domain"], row["metric"]]
        table.add_row(*("" if cell is None else str(cell) for cell in cells), f"{row['value']:.4f}",
                      str(row["n"]))
    return table
