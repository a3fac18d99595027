"""Subflow: score the pending candidates shard by shard on the chosen task runner; this process merges."""

from __future__ import annotations

from prefect import flow
from prefect.runtime import flow_run
from prefect.task_runners import ThreadPoolTaskRunner

from capsel.db import open_db
from capsel.orchestration.sharded_scoring import keys_for, run_sharded_scoring
from capsel.pipeline_config import ModelSpec, PipelineConfig, RunnerParams
from capsel.scoring.runner import RunSummary
from capsel.scoring.store import ScoreKeys
from flows.artifacts import ProgressArtifact
from tasks.model import describe_model_task
from tasks.score import score_shard_task


def task_runner_for(runner: RunnerParams):
    """Threads of this process, or prefect-ray's RayTaskRunner (a running cluster or one started here)."""
    if runner.kind == "local":
        return ThreadPoolTaskRunner(max_workers=runner.max_workers)
    from prefect_ray.task_runners import RayTaskRunner

    init_kwargs = {"include_dashboard": False}
    if runner.ray_address is None and runner.ray_num_cpus is not None:
        init_kwargs["num_cpus"] = runner.ray_num_cpus
    return RayTaskRunner(address=runner.ray_address, init_kwargs=init_kwargs)


@flow(name="capsel-score-shards", log_prints=True)
def score_shards_flow(config: PipelineConfig, spec: ModelSpec, parent_run_id: str) -> tuple[RunSummary, ScoreKeys]:
    """Plan the pending shards, dispatch each to a worker task, merge every result as one transaction.

    Returns the run's counters and the keys (model fingerprint, config hashes) it scored under.
    """
    scoring = config.scoring.scoring_config()
    config.runner.pin_threads()
    info = describe_model_task(spec)
    submit = submitter(config.runner, score_shard_task, spec, scoring, config.scoring.batch_size)
    con = open_db(config.settings().db_path)
    try:
        summary = run_sharded_scoring(
            con, info, scoring, config.scoring.shard_size, submit, config.runner.max_in_flight,
            sink=ProgressArtifact(f"scoring with model {info.fingerprint}"),
            run_config={"runner": config.runner.model_dump(), "batch_size": config.scoring.batch_size},
            parent_run_id=parent_run_id, prefect_flow_run_id=flow_run.id,
        )
    finally:
        con.close()
    return summary, keys_for(info, scoring)


def submitter(runner: RunnerParams, shard_task, *args):
    """work -> a future of `shard_task(*args, work)` on the runner's workers (Ray: with the shard's resources)."""
    if runner.kind == "local":
        return lambda work: shard_task.submit(*args, work)
    from prefect_ray.context import remote_options

    def submit(work):
        # each shard is one Ray task holding its GPUs (none on a CPU cluster) and one CPU
        with remote_options(num_gpus=runner.num_gpus, num_cpus=1):
            return shard_task.submit(*args, work)

    return submit


def score_pending(config: PipelineConfig, spec: ModelSpec, parent_run_id: str) -> tuple[RunSummary, ScoreKeys]:
    """Run the scoring subflow on the task runner the config asks for."""
    return score_shards_flow.with_options(task_runner=task_runner_for(config.runner))(config, spec, parent_run_id)
