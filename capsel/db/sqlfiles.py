"""Every SQL statement lives in sql/*.sql; this runs them with bound parameters."""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import files
from typing import Any

import duckdb


@lru_cache(maxsize=None)
def sql_text(name: str) -> str:
    """Text of `sql/<name>.sql` (name may include a subfolder, e.g. 'migrations/001_init')."""
    resource = files("capsel.sql").joinpath(*f"{name}.sql".split("/"))
    return resource.read_text(encoding="utf-8")


def run_sql(
    con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any] | None = None
) -> duckdb.DuckDBPyConnection:
    """Execute one SQL file; values are always bound as `$name` parameters, never formatted in."""
    if params:
        return con.execute(sql_text(name), params)
    return con.execute(sql_text(name))


def first_row(con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any] | None = None) -> tuple | None:
    """The first row a SQL file returns (None when it returns none), its result read to the end.

    `fetchone()` would leave the result open on `con`, and DuckDB then refuses `con.sql(...)` until it is read.
    """
    rows = run_sql(con, name, params).fetchall()
    return rows[0] if rows else None


def one_row(con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any] | None = None) -> tuple:
    """The single row an aggregate SQL file returns (a query that returns none is a bug, raised as such)."""
    row = first_row(con, name, params)
    if row is None:
        raise RuntimeError(f"sql/{name}.sql returned no row")
    return row


def sql_relation(
    con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any] | None = None
) -> duckdb.DuckDBPyRelation:
    """One SQL query file as a lazy relation (bound parameters too): Arrow output without an extra copy.

    It runs on a cursor of `con`, so a result left half-fetched on `con` itself does not block it;
    it sees committed data only.
    """
    return con.cursor().sql(sql_text(name), params=params)
