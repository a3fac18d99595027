"""Flow: ingest → generate + score (sharded, resumable) → residualize → gate → publish one selection."""

from __future__ import annotations

from prefect import flow

from capsel.flows.pipeline import run_pipeline
from capsel.pipeline_config import PipelineConfig


@flow(name="capsel-select", log_prints=True)
def select_flow(config: PipelineConfig) -> dict:
    """Bring the pool up to date with the given sources and publish a selection of it."""
    return run_pipeline(config, "select", publish_unchanged=True)
