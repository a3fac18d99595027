"""Task: ingest source files into the pool (dedup against it; files already ingested are no-ops)."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from capsel.ingest.summary import IngestReport
from capsel.stages.context import RunContext
from capsel.stages.ingest import IngestRequest, ingest


@task(name="ingest", cache_policy=NO_CACHE)
def ingest_task(request: IngestRequest, ctx: RunContext) -> IngestReport:
    """Ingest the request's files as one run of the flow."""
    return ingest(request, ctx)
