"""Which candidates a run covers, and its pending rows read page by page in candidate-id order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:  # a Scope is an option of commands and flow configs, checked at --help time without duckdb
    import duckdb


@dataclass(frozen=True)
class Scope:
    """Which candidates a run covers: an optional domain and an optional cap on how many to process."""

    domain: str | None = None
    limit: int | None = None


@dataclass(frozen=True)
class PendingQuery:
    """The SQL that pages a scorer's pending rows: `bounds_sql` ends every page once per run (binding the key),
    `page_sql` reads one page's window (binding the key and `page_params`, what it joins for reuse)."""

    bounds_sql: str
    page_sql: str
    key_params: dict
    page_params: dict = field(default_factory=dict)


def pending_pages(
    con: duckdb.DuckDBPyConnection, query: PendingQuery, scope: Scope, page_size: int
) -> Iterator[list[dict]]:
    """Pending rows in candidate-id order, page by page, at most scope.limit in all.

    The last id of every page is found by one sort when the first page is asked for; each page then reads the
    candidates and stored rows inside its id window (after the page before, up to its own last id) only, so a
    run reads the store a bounded number of times rather than once per page. Each page is read only when the
    caller asks for it, and still leaves out what has a result by then, so nothing is scored twice.
    """
    from capsel.db.records import fetch_records
    from capsel.store.image_files import attach_image_files

    scope_params = {"domain": scope.domain, **query.key_params}
    bounds = fetch_records(con, query.bounds_sql, {**scope_params, "page_size": page_size, "n_limit": scope.limit})
    after = ""
    for bound in bounds:
        upto = bound["upto_candidate_id"]
        rows = fetch_records(con, query.page_sql, {
            **scope_params, **query.page_params, "after_candidate_id": after, "upto_candidate_id": upto,
        })
        after = upto
        if rows:
            yield attach_image_files(con, rows)
