"""Rows of a SQL file as plain Python dicts (None stays None, unlike a pandas round trip)."""

from __future__ import annotations

from typing import Any

import duckdb

from capsel.db.sqlfiles import run_sql


def fetch_records(
    con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Run `sql/<name>.sql` and return its rows as dicts keyed by column name."""
    cursor = run_sql(con, name, params)
    columns = [column[0] for column in cursor.description]
    return [dict(zip(columns, row)) for row in cursor.fetchall()]
