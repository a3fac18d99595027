"""`capsel quarantine`: the rows ingest set aside, with the reason for each."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from capsel.cli.common import DbOption, JsonOption, console, json_output, read_store, settings_for
from capsel.cli.tables import print_table
from capsel.ingest.reasons import REASON_HELP, Reason
from capsel.terminal_text import TextTable

RAW_PREVIEW_CHARS = 120


def quarantine(
    reason: Annotated[Optional[Reason], typer.Option(
        "--reason", metavar="REASON", show_default=False,
        help=f"Only rows quarantined for this reason: {', '.join(Reason)}.",
    )] = None,
    source: Annotated[Optional[str], typer.Option(
        "--source", metavar="FILE|ID", show_default=False,
        help="Only rows of this file (the path given to ingest) or source id.",
    )] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Show at most this many rows.")] = 20,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Show quarantined rows with their file, row number, reason, detail and raw text."""
    from capsel.quarantine import quarantined_rows  # duckdb: not for --help

    with read_store(settings_for(db).db_path) as con:
        listing = quarantined_rows(con, reason.value if reason else None, _source_key(source), limit)
    with json_output(json_out) as output:
        output.emit({"n_matching": listing.n_matching, "n_shown": len(listing.rows), "rows": listing.rows})
        if not listing.rows:
            console.print("no quarantined rows" + (" match" if reason or source else ""))
            return
        table = TextTable(title=f"{len(listing.rows):,} of {listing.n_matching:,} quarantined rows", show_lines=True)
        for name in ("file:row", "reason", "detail", "raw text"):
            table.add_column(name, overflow="fold")
        for row in listing.rows:
            raw = row["raw_text"] or ""
            raw = raw if len(raw) <= RAW_PREVIEW_CHARS else raw[:RAW_PREVIEW_CHARS] + "…"
            table.add_row(f"{row['path']}:{row['source_row']}", row["reason"], row["detail"] or "", raw)
        print_table(console, table)
        for shown in dict.fromkeys(row["reason"] for row in listing.rows):
            console.print(f"{shown}: {REASON_HELP[Reason(shown)]}")
        if listing.n_matching > len(listing.rows):
            console.print(f"{listing.n_matching - len(listing.rows):,} more: raise --limit or narrow with "
                          "--reason/--source")


def _source_key(source: str | None) -> str | None:
    # ingest stores resolved paths; a source id (16 hex digits) is not a file here and stays as typed
    if source is None:
        return None
    path = Path(source).expanduser()
    return str(path.resolve()) if path.exists() else source
