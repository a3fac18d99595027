"""Task: the members of a selection under its budget."""

from __future__ import annotations

import duckdb
from prefect import task
from prefect.cache_policies import NO_CACHE

from capsel.selection.plan import Selection, SelectionRequest, build_selection
from capsel.selection.scoring_key import ScoringKey


@task(name="select", cache_policy=NO_CACHE)
def select_members_task(con: duckdb.DuckDBPyConnection, request: SelectionRequest, key: ScoringKey) -> Selection:
    """Size the per-domain quotas and take the highest z (or the seeded random control)."""
    return build_selection(con, request, key)
