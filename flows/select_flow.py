"""Flow: ingest → generate + score (sharded, resumable) → residualize → gate → publish one selection."""

from __future__ import annotations

from prefect import flow
from prefect.states import State

from capsel.flows.deployment_defaults import with_deployment_part
from capsel.flows.pipeline import run_pipeline
from capsel.methods.scorer_spec import ScorerSpec
from capsel.pipeline_config import PipelineConfig, RunnerParams, SelectionParams, SourceParams, documented_parameters


@flow(name="capsel-select", log_prints=True)
@documented_parameters
def select_flow(
    sources: SourceParams = SourceParams(),
    scoring: ScorerSpec | None = None,
    selection: SelectionParams = SelectionParams(),
    runner: RunnerParams = RunnerParams(),
    db_path: str | None = None,
    output_root: str | None = None,
    check_profile: bool = True,
) -> dict | State:
    """Bring the pool up to date with the given sources and publish a selection of it.

    Each part is its own parameter, so a run overrides one (say `selection`) and keeps the
    deployment's others. No `scoring` means CAP with $CAPSEL_MODEL; no source paths, the
    incoming folder ($CAPSEL_INCOMING_DIR). `check_profile` surveys the model's rank profile
    once per model (the verdict is kept in the database) and warns without the U-shape.
    """
    def config() -> PipelineConfig:
        parts = {name: with_deployment_part(name, part)
                 for name, part in (("sources", sources), ("selection", selection), ("runner", runner))}
        scored = with_deployment_part("scoring", scoring) if scoring is not None else None
        return PipelineConfig.from_parameters(scored, **parts, db_path=db_path, output_root=output_root,
                                              check_profile=check_profile)

    # built inside the run, so a config that cannot be made fails the run with its message
    return run_pipeline(config, "select", publish_unchanged=True)
