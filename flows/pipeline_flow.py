"""The selection pipeline as a named Prefect flow: the parameters every pipeline flow takes are declared here once,
and a flow module (select_flow, rescore_flow) names the flow, its docstring and how it differs."""

from __future__ import annotations

from prefect import Flow, flow
from prefect.states import State

from capsel.flows.deployment_defaults import with_deployment_part
from capsel.flows.pipeline import run_pipeline
from capsel.methods.scorer_spec import ScorerSpec
from capsel.pipeline_config import PipelineConfig, RunnerParams, SourceParams, documented_parameters
from capsel.selection.params import SelectionParams


def pipeline_flow(flow_key: str, module: str, doc: str, *, check_profile: bool, publish_unchanged: bool) -> Flow:
    """The flow `capsel-<flow_key>`, found as `<flow_key>_flow` in `module` (where deployments point), that runs
    the pipeline; `check_profile` is its default for the rank-profile survey, and with `publish_unchanged` False a
    run that found nothing new publishes nothing."""
    profile_default = check_profile

    def pipeline(
        sources: SourceParams = SourceParams(),
        scoring: ScorerSpec | None = None,
        selection: SelectionParams = SelectionParams(),
        runner: RunnerParams = RunnerParams(),
        db_path: str | None = None,
        output_root: str | None = None,
        check_profile: bool = profile_default,
    ) -> dict | State:
        def config() -> PipelineConfig:
            parts = {name: with_deployment_part(name, part)
                     for name, part in (("sources", sources), ("selection", selection), ("runner", runner))}
            scored = with_deployment_part("scoring", scoring) if scoring is not None else None
            return PipelineConfig.from_parameters(scored, **parts, db_path=db_path, output_root=output_root,
                                                  check_profile=check_profile)

        # built inside the run, so a config that cannot be made fails the run with its message
        return run_pipeline(config, flow_key, publish_unchanged=publish_unchanged)

    # Prefect names a flow's entrypoint by its function's module and name: the flow module's, not this factory's
    pipeline.__module__, pipeline.__doc__ = module, doc
    pipeline.__name__ = pipeline.__qualname__ = f"{flow_key}_flow"
    return flow(name=f"capsel-{flow_key}", log_prints=True)(documented_parameters(pipeline))
