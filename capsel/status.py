"""What the store holds, per domain: the pool, rows dropped at ingest, scores and selections."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import orjson

from capsel.db import first_row, one_row, run_sql


@dataclass(frozen=True)
class DomainStatus:
    """Counts of one domain across every run ('(none)' collects quarantined rows without a domain)."""

    domain: str
    n_candidates: int
    n_duplicates: int
    n_quarantined: int
    n_sampled_out: int
    n_scored: int
    n_selections: int


@dataclass(frozen=True)
class SourceTotals:
    """How many files were ingested, with how many rows and bytes."""

    n_sources: int
    n_rows_read: int
    n_bytes: int


@dataclass(frozen=True)
class LatestFunnel:
    """The newest published selection and its funnel, as `capsel lineage <selection_id>` shows it."""

    selection_id: str
    funnel: list[dict]


def domain_status(con: duckdb.DuckDBPyConnection) -> list[DomainStatus]:
    """Per-domain counts, ordered by domain."""
    return [DomainStatus(*row) for row in run_sql(con, "status/status_domains").fetchall()]


def source_totals(con: duckdb.DuckDBPyConnection) -> SourceTotals:
    """Totals over every ingested source file."""
    return SourceTotals(*one_row(con, "status/status_sources"))


def latest_funnel(con: duckdb.DuckDBPyConnection) -> LatestFunnel | None:
    """The funnel of the newest published selection, or None before any selection recorded one."""
    row = first_row(con, "status/latest_funnel")
    return None if row is None else LatestFunnel(selection_id=row[0], funnel=orjson.loads(row[2]))
