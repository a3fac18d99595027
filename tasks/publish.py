"""Task: the data-quality gate, then the atomic publish of a selection."""

from __future__ import annotations

from pathlib import Path

import duckdb
from prefect import task
from prefect.cache_policies import NO_CACHE

from capsel.publish.publish import PublishedSelection, publish_selection
from capsel.selection.plan import Selection


@task(name="validate-and-publish", cache_policy=NO_CACHE)
def validate_and_publish(
    con: duckdb.DuckDBPyConnection, selection: Selection, out_dir: Path, run_id: str, report_max_points: int
) -> PublishedSelection:
    """Run the GX gate and publish only if it passes (GateFailedError otherwise, nothing published)."""
    return publish_selection(con, selection, out_dir, run_id, report_max_points)
