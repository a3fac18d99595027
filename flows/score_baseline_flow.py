"""Flow: one baseline over the pending pool, shard by shard on the chosen runner; LESS then scores its target."""

from __future__ import annotations

from pathlib import Path

import torch
from prefect import Flow, flow
from prefect.runtime import flow_run

from capsel.baselines.less.target import TargetFile, read_target
from capsel.db import open_db
from capsel.orchestration.baseline_worker import host_options, resolved_options
from capsel.orchestration.sharded_baselines import run_sharded_baseline
from capsel.pipeline_config import BaselineFlowConfig
from capsel.scoring.store import Scope
from flows.artifacts import ProgressArtifact
from flows.score_shards import submitter, task_runner_for
from tasks.score_baseline import describe_scorer_task, less_target_task, score_baseline_shard_task


@flow(name="capsel-score-baseline", log_prints=True)
def score_baseline_flow(config: BaselineFlowConfig) -> dict:
    """Score every pending candidate for the method (resumable shards, one writer); with LESS and a target, score it.

    The LESS target's gradients and the cosines are computed here, after the candidates' features.
    """
    target = _target(config)
    config.runner.pin_threads()
    uses_gpus = config.runner.kind == "ray" and config.runner.num_gpus > 0
    options = resolved_options(config.scorer_options(), uses_gpus, torch.cuda.is_available())
    scorer = describe_scorer_task(config.method, host_options(options))
    submit = submitter(config.runner, score_baseline_shard_task, config.method, options)
    con = open_db(config.settings().db_path)
    try:
        summary = run_sharded_baseline(
            con, scorer, config.shard_size, submit, config.runner.max_in_flight, Scope(config.domain, config.limit),
            sink=ProgressArtifact(f"{config.method} with scorer {scorer.identity.fingerprint}"),
            run_config={"runner": config.runner.model_dump(), "flow": "capsel-score-baseline"},
            prefect_flow_run_id=flow_run.id,
        )
        counters = {"method": config.method, "scorer_fingerprint": scorer.identity.fingerprint,
                    "config_hash": scorer.config.hash, "score": summary.counters()}
        if target is not None:
            less = less_target_task(con, scorer, target)
            counters["target"] = {"target_fingerprint": less.target["target_fingerprint"],
                                  "target_computed": less.target_computed, "n_used": less.target["n_used"],
                                  "n_examples": less.target["n_examples"], "n_scores_written": less.n_scores_written}
    finally:
        con.close()
    return counters


def score_baseline_flow_for(config: BaselineFlowConfig) -> Flow:
    """The flow on the task runner the config asks for (local threads, or Ray)."""
    return score_baseline_flow.with_options(task_runner=task_runner_for(config.runner))


def _target(config: BaselineFlowConfig) -> TargetFile | None:
    if config.target is None:
        return None
    target = TargetFile.of(Path(config.target), config.target_max)
    read_target(target)  # a bad target row fails now, not after the pool's gradients
    return target
