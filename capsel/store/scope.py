"""Which candidates a run covers, and its pending rows read page by page in candidate-id order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import duckdb

from capsel.db.records import fetch_records
from capsel.store.image_files import attach_image_files


@dataclass(frozen=True)
class Scope:
    """Which candidates a run covers: an optional domain and an optional cap on how many to process."""

    domain: str | None = None
    limit: int | None = None


def pending_pages(
    con: duckdb.DuckDBPyConnection, sql_name: str, key_params: dict, scope: Scope, page_size: int
) -> Iterator[list[dict]]:
    """Pending rows in candidate-id order, page by page (keyset paging), at most scope.limit in all.

    Each page is read only when the caller asks for it, so what earlier pages wrote is already excluded.
    """
    after, remaining = "", scope.limit
    while remaining is None or remaining > 0:
        n_rows = page_size if remaining is None else min(page_size, remaining)
        rows = fetch_records(con, sql_name, {
            "domain": scope.domain, "after_candidate_id": after, "n_rows": n_rows, **key_params,
        })
        if not rows:
            return
        yield attach_image_files(con, rows)
        after = rows[-1]["candidate_id"]
        if remaining is not None:
            remaining -= len(rows)
