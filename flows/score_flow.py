"""Flow: score the pending pool with any method, shard by shard on the chosen task runner; this process merges."""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from uuid import UUID

import torch
from prefect import Flow, flow
from prefect.runtime import flow_run
from prefect.task_runners import ThreadPoolTaskRunner

from capsel.config import Settings, load_settings
from capsel.db import open_db
from capsel.db.progress_file import name_job
from capsel.flows.artifacts import ProgressArtifact, artifact_keys
from capsel.flows.job_name import flow_job
from capsel.methods.scorer_spec import ScorerSpec
from capsel.pipeline_config import RunnerParams, ScoreFlowConfig
from capsel.runner.work import default_shard_size, workers_spec
from capsel.stages.context import RunContext
from capsel.stages.generate import pre_pass_for, run_pre_pass
from capsel.stages.score import ScoreRequest, ScoreSummary, score
from capsel.store.scope import Scope
from capsel.tasks.score import describe_scorer_task, score_shard_task


def task_runner_for(runner: RunnerParams):
    """Threads of this process, or prefect-ray's RayTaskRunner (a running cluster or one started here)."""
    if runner.kind == "local":
        return ThreadPoolTaskRunner(max_workers=runner.max_workers)
    from prefect_ray.task_runners import RayTaskRunner

    init_kwargs: dict[str, Any] = {"include_dashboard": False}
    if runner.ray_address is None and runner.ray_num_cpus is not None:
        init_kwargs["num_cpus"] = runner.ray_num_cpus
    return RayTaskRunner(address=runner.ray_address, init_kwargs=init_kwargs)


def submitter(runner: RunnerParams, spec: ScorerSpec):
    """work -> a future of the shard task on the runner's workers (Ray: with the shard's resources)."""
    if runner.kind == "local":
        return lambda work: score_shard_task.submit(spec, work)
    from prefect_ray.context import remote_options

    def submit(work):
        # each shard is one Ray task holding its GPUs (none on a CPU cluster) and one CPU
        with remote_options(num_gpus=runner.num_gpus, num_cpus=1):
            return score_shard_task.submit(spec, work)

    return submit


def score_sharded(
    con, settings: Settings, spec: ScorerSpec, runner: RunnerParams, scope: Scope, parent_run_id: str | None = None,
    progress_artifact_id: UUID | None = None,
) -> ScoreSummary:
    """Run the score stage with the shards dispatched to the runner's workers (device and dtype fixed for all).

    Progress goes to `progress_artifact_id` (the parent flow's) when given, else to an artifact of its own.
    """
    runner.pin_threads()
    spec = workers_spec(spec, runner.uses_gpus, torch.cuda.is_available())
    scorer = describe_scorer_task(spec)
    ctx = RunContext(
        con, settings, ProgressArtifact(f"{spec.method} with model {scorer.identity.fingerprint}",
                                        artifact_keys("score", settings).key("progress"), progress_artifact_id),
        parent_run_id=parent_run_id, prefect_flow_run_id=flow_run.id, dispatch=submitter(runner, spec),
        page_size=runner.shard_size or default_shard_size(spec, scorer), max_in_flight=runner.max_in_flight,
        run_config={"runner": runner.model_dump()},
    )
    generated = run_pre_pass(pre_pass_for(runner.generator, settings, scorer), scope, ctx)
    return replace(score(ScoreRequest(spec, scope, scorer), ctx), generation=generated)


@flow(name="capsel-score", log_prints=True)
def score_flow(config: ScoreFlowConfig, parent_run_id: str | None = None,
               progress_artifact_id: UUID | None = None) -> ScoreSummary:
    """Score every pending candidate for the method (resumable shards, one writer); with LESS and a target, score it.

    `parent_run_id` ties the scoring run to the selection flow run that started this one as a subflow, and
    `progress_artifact_id` is that run's progress artifact, so the user sees scoring on the run they opened.
    """
    config.check_parameters(load_settings())  # before anything is read or written
    if parent_run_id is None:  # a subflow keeps the name its parent flow gave the process
        name_job(flow_job())
    con = open_db(config.settings().db_path, must_exist=True)
    try:
        return score_sharded(con, config.settings(), config.scoring, config.runner, config.scope(), parent_run_id,
                             progress_artifact_id)
    finally:
        con.close()


def score_flow_for(config: ScoreFlowConfig) -> Flow:
    """The flow on the task runner the config asks for (local threads, or Ray)."""
    return score_flow.with_options(task_runner=task_runner_for(config.runner))
