"""What the store holds, per domain: the pool, rows dropped at ingest, scores and selections."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from capsel.db import one_row, run_sql


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


def domain_status(con: duckdb.DuckDBPyConnection) -> list[DomainStatus]:
    """Per-domain counts, ordered by domain."""
    return [DomainStatus(*row) for row in run_sql(con, "status/status_domains").fetchall()]


def source_totals(con: duckdb.DuckDBPyConnection) -> SourceTotals:
    """Totals over every ingested source file."""
    return SourceTotals(*one_row(con, "status/status_sources"))
