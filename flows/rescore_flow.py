"""Flow: new files only → score only the new candidates → refit over the whole pool → publish a new version."""

from __future__ import annotations

from prefect import flow

from capsel.flows.pipeline import run_pipeline
from capsel.pipeline_config import PipelineConfig


@flow(name="capsel-rescore", log_prints=True)
def rescore_flow(config: PipelineConfig) -> dict:
    """Ingest what arrived in the incoming folder(s) and, when anything is new, publish a new selection version.

    Files already ingested (same sha256) are no-ops and only pending candidates are scored, so
    a nightly run over an unchanged folder publishes nothing; older versions are never touched.
    """
    return run_pipeline(config, "rescore", publish_unchanged=False)
