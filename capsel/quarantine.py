"""The rows ingest could not turn into candidates, with their reasons: listed and counted."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb

from capsel.db.records import fetch_records


@dataclass(frozen=True)
class QuarantineListing:
    """Up to `limit` quarantined rows matching a filter, and how many match in all."""

    rows: list[dict[str, Any]]
    n_matching: int


def quarantined_rows(
    con: duckdb.DuckDBPyConnection, reason: str | None = None, source: str | None = None, limit: int = 20,
) -> QuarantineListing:
    """Quarantined rows in file order, of one reason and/or one source (its resolved path or source id)."""
    rows = fetch_records(con, "status/quarantine_rows", {"reason": reason, "source": source, "limit": limit})
    n_matching = rows[0]["n_matching"] if rows else 0
    return QuarantineListing([{k: v for k, v in row.items() if k != "n_matching"} for row in rows], n_matching)


def quarantine_reasons(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Quarantined rows per reason (most first), with the number of files holding them."""
    return fetch_records(con, "status/quarantine_reasons")
