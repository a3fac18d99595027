"""What a new selection version changed against the previous version of its line: added, dropped, overlap."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from capsel.compare.metrics import jaccard
from capsel.db import first_row, run_sql


@dataclass(frozen=True)
class VersionDiff:
    """Members of `selection_id` against `previous_id`, the version before it of the same line."""

    selection_id: str
    previous_id: str
    added: frozenset[str]
    dropped: frozenset[str]
    jaccard: float

    def line(self) -> str:
        """One sentence for the summary and the log."""
        return (f"since `{self.previous_id}`: {len(self.added)} member(s) added, {len(self.dropped)} dropped, "
                f"Jaccard overlap {self.jaccard:.3f}")


def version_diff(con: duckdb.DuckDBPyConnection, selection_id: str) -> VersionDiff | None:
    """The change since the previous published version of the same (model, config, method, budget), if any."""
    row = first_row(con, "publish/previous_version", {"selection_id": selection_id})
    if row is None:
        return None
    previous_id = row[0]
    now, before = _member_ids(con, selection_id), _member_ids(con, previous_id)
    # the same overlap `capsel compare` reports, so the two never disagree
    return VersionDiff(selection_id, previous_id, frozenset(now - before), frozenset(before - now),
                       jaccard(now, before))


def _member_ids(con: duckdb.DuckDBPyConnection, selection_id: str) -> set[str]:
    return {row[0] for row in run_sql(con, "publish/selection_member_ids", {"selection_id": selection_id}).fetchall()}
