"""`capsel evaluations`: every stored evaluation metric, or each target against one with paired intervals."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from capsel.cli.common import DbOption, JsonOption, console, json_output, read_store, settings_for
from capsel.cli.tables import interval_text, print_table
from capsel.terminal_text import TextTable


def evaluations(
    against: Annotated[Optional[str], typer.Option(
        "--against", help="Compare every other target evaluated on the same file with this one (base:MODEL, a "
        "fine-tune id, or a selection id: its seeds' models as one): delta, its paired bootstrap 95% CI and a "
        "verdict, per domain and overall.", show_default=False)] = None,
    eval_spec: Annotated[Optional[str], typer.Option(
        "--eval", help="With --against: only this evaluation, as it was typed (e.g. loss:heldout.jsonl).",
        show_default=False)] = None,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """List stored evaluations newest first, or compare each target with one (--against), with paired 95% intervals."""
    from capsel.db.records import fetch_records  # duckdb: not for --help

    with read_store(settings_for(db).db_path) as con:
        if against is not None:
            _print_comparisons(con, against, eval_spec, json_out)
            return
        rows = fetch_records(con, "evaluation/evaluations_list")
    with json_output(json_out) as output:
        output.emit({"evaluations": rows})
        if not rows:
            console.print("no evaluations yet: `capsel evaluate TARGET --eval loss:FILE` makes one")
            return
        print_table(console, _table(rows))


def _print_comparisons(con, against: str, eval_spec: str | None, json_out: bool) -> None:
    from capsel.evaluation.paired import comparisons_of

    with json_output(json_out) as output:
        comparisons = comparisons_of(con, against, eval_spec)
        output.emit({"comparisons": [comparison.as_dict() for comparison in comparisons]})
        if not comparisons:
            console.print(f"nothing else was evaluated on the same rows as {against}")
            return
        print_table(console, comparison_table(comparisons))


def comparison_table(comparisons) -> TextTable:
    """Each target against the reference: what selected it, value, delta, paired 95% CI, rows and verdict."""
    from capsel.evaluation.comparison_cells import COLUMNS, TEXT_COLUMNS, comparison_cells

    first = comparisons[0]
    seeds = f" ({first.against_seeds} seeds)" if first.against_seeds > 1 else ""
    table = TextTable(title=f"against {first.reference()}{seeds}: delta = value - its value, paired bootstrap 95% "
                            "CI")
    for name in COLUMNS:
        table.add_column(name, justify="left" if name in TEXT_COLUMNS else "right")
    for row in comparisons:
        table.add_row(*comparison_cells(row))
    return table


def _table(rows: list[dict]) -> TextTable:
    table = TextTable(title="evaluations, newest first")
    names = ("target", "selection", "method", "budget", "seed", "eval", "domain", "metric", "value", "95% CI", "n")
    for name in names:
        table.add_column(name, justify="right" if name in ("seed", "value", "95% CI", "n") else "left")
    for row in rows:
        cells = [row["target"], row["selection_id"], row["method"], row["budget"], row["seed"], row["eval_spec"],
                 row["domain"], row["metric"]]
        ci95 = (row["ci_low"], row["ci_high"]) if row["ci_low"] is not None else None
        table.add_row(*("" if cell is None else str(cell) for cell in cells), f"{row['value']:.4f}",
                      interval_text(ci95), str(row["n"]))
    return table
