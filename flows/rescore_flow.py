"""Flow: new files only → score only the new candidates → refit over the whole pool → publish a new version."""

from __future__ import annotations

from prefect import flow
from prefect.states import State

from capsel.flows.deployment_defaults import with_deployment_part
from capsel.flows.pipeline import run_pipeline
from capsel.methods.scorer_spec import ScorerSpec
from capsel.pipeline_config import PipelineConfig, RunnerParams, SelectionParams, SourceParams, documented_parameters


@flow(name="capsel-rescore", log_prints=True)
@documented_parameters
def rescore_flow(
    sources: SourceParams = SourceParams(),
    scoring: ScorerSpec | None = None,
    selection: SelectionParams = SelectionParams(),
    runner: RunnerParams = RunnerParams(),
    db_path: str | None = None,
    output_root: str | None = None,
    check_profile: bool = False,
) -> dict | State:
    """Ingest what arrived in the incoming folder(s) and, when anything is new, publish a new selection version.

    Files already ingested (same sha256) are no-ops and only pending candidates are scored, so
    a nightly run over an unchanged folder publishes nothing; older versions are never touched.
    The rank-profile check is off here unless asked: a schedule should not wait on a survey.
    """
    def config() -> PipelineConfig:
        parts = {name: with_deployment_part(name, part)
                 for name, part in (("sources", sources), ("selection", selection), ("runner", runner))}
        scored = with_deployment_part("scoring", scoring) if scoring is not None else None
        return PipelineConfig.from_parameters(scored, **parts, db_path=db_path, output_root=output_root,
                                              check_profile=check_profile)

    # built inside the run, so a config that cannot be made fails the run with its message
    return run_pipeline(config, "rescore", publish_unchanged=False)
