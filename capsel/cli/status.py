"""`capsel status`: what the store holds per domain."""

from __future__ import annotations

from rich import box
from rich.table import Table

from capsel.cli.common import DbOption, console, settings_for
from capsel.cli.tables import print_table
from capsel.cli.wrapping import print_unbroken
from capsel.db import open_db
from capsel.status import domain_status, source_totals


def status(db: DbOption = None) -> None:
    """Show per-domain candidates, dropped rows, scored candidates and selections."""
    settings = settings_for(db)
    con = open_db(settings.db_path, read_only=True)
    try:
        totals = source_totals(con)
        domains = domain_status(con)
    finally:
        con.close()
    print_unbroken(console, f"{settings.db_path}: {totals.n_sources:,} source files, "
                            f"{totals.n_rows_read:,} rows read, {totals.n_bytes / 2**20:,.1f} MiB")
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
    headers = ["domain", "candidates", "duplicates", "quarantined", "sampled out", "scored", "selections"]
    for header in headers:
        table.add_column(header, justify="left" if header == "domain" else "right", min_width=len(header))
    for row in domains:
        values = (row.n_candidates, row.n_duplicates, row.n_quarantined, row.n_sampled_out, row.n_scored,
                  row.n_selections)
        table.add_row(row.domain, *(f"{value:,}" for value in values))
    print_table(console, table)
