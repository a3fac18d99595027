"""`capsel status`: what the store holds per domain."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from rich import box

from capsel.cli.common import DbOption, JsonOption, console, json_output, read_store, settings_for
from capsel.cli.tables import print_table
from capsel.cli.wrapping import print_unbroken
from capsel.publish.funnel import funnel_lines
from capsel.terminal_text import TextTable, markup, plain

if TYPE_CHECKING:  # the store's queries load duckdb: not for --help
    from capsel.db.connection import DatabaseLockedError
    from capsel.status import DomainStatus, LatestFunnel, SourceTotals


def status(json_out: JsonOption = False, db: DbOption = None) -> None:
    """Show per-domain candidates, dropped rows, scored candidates and selections.

    While another process writes the database, show that process and its progress instead.
    """
    from capsel.db.connection import DatabaseLockedError
    from capsel.quarantine import quarantine_reasons
    from capsel.status import domain_status, latest_funnel, source_totals

    settings = settings_for(db)
    try:
        # only opening can find the store locked: the queries run on an open read-only connection
        with read_store(settings.db_path) as con:
            totals = source_totals(con)
            domains = domain_status(con)
            reasons = quarantine_reasons(con)
            latest = latest_funnel(con)
    except DatabaseLockedError as locked:
        print_writer(settings.db_path, locked, json_out)
        return
    with json_output(json_out) as output:
        output.emit({"db": settings.db_path, "sources": asdict(totals), "domains": [asdict(row) for row in domains],
                     "quarantine_reasons": reasons, "latest_selection": None if latest is None else asdict(latest)})
        print_status(settings.db_path, totals, domains, reasons, latest)


def print_writer(db_path: Path, locked: DatabaseLockedError, json_out: bool) -> None:
    """Who holds the database for writing and how far it has got, from its progress file."""
    progress = locked.holder_progress
    with json_output(json_out) as output:
        output.emit({"db": db_path, "held_by": {"pid": locked.holder_pid,
                                                "progress": None if progress is None else progress.as_dict()}})
        if progress is None:
            print_unbroken(console, markup("{} is held for writing by process {}, which reports no progress (not a "
                                           "capsel run, or one from before progress files)", db_path,
                                           locked.holder_pid))
            return
        print_unbroken(console, markup("{} is being written by process {} on {}: `{}`", db_path, progress.pid,
                                       progress.host, progress.command))
        print_unbroken(console, markup("run {}: {}", progress.run_id or "-", progress.summary()))
        console.print("The store's counts are shown once it ends: DuckDB lets no other process read it meanwhile.")


def print_status(db_path: Path, totals: SourceTotals, domains: list[DomainStatus], reasons: list[dict],
                 latest: LatestFunnel | None) -> None:
    """Totals, the per-domain table, the quarantine reasons with the command that shows their rows, and the
    newest selection's funnel."""
    print_unbroken(console, markup("{}: {:,} source files, {:,} rows read, {:,.1f} MiB", db_path, totals.n_sources,
                                   totals.n_rows_read, totals.n_bytes / 2**20))
    table = TextTable(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
    headers = ["domain", "candidates", "duplicates", "quarantined", "sampled out", "scored", "selections"]
    for header in headers:
        table.add_column(header, justify="left" if header == "domain" else "right", min_width=len(header))
    for row in domains:
        values = (row.n_candidates, row.n_duplicates, row.n_quarantined, row.n_sampled_out, row.n_scored,
                  row.n_selections)
        table.add_row(row.domain, *(f"{value:,}" for value in values))
    print_table(console, table)
    if reasons:
        counts = ", ".join(f"{row['reason']} {row['n_rows']:,}" for row in reasons)
        print_unbroken(console, markup("quarantined by reason: {}; the rows: `capsel quarantine --reason REASON`",
                                       counts))
    if latest is not None:
        console.print(markup("funnel of the newest selection {} (its dropped rows: excluded.parquet):",
                             latest.selection_id))
        for line in funnel_lines(latest.funnel):
            console.print(plain("  " + line))
