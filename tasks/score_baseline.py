"""Tasks of baseline scoring: one shard on a worker (no database), and LESS's target scores in the writer."""

from __future__ import annotations

import duckdb
from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.tasks import exponential_backoff

from capsel.baselines.less.scorer import LessFeatureScorer
from capsel.baselines.less.scoring import LessSummary, score_target
from capsel.baselines.less.target import TargetFile
from capsel.baselines.registry import scorer_module
from capsel.baselines.scorer import BaselineScorer, ScorerOptions
from capsel.orchestration.baseline_worker import BaselineShardResult, BaselineShardWork, score_baseline_shard
from tasks.score import SHARD_RETRIES


@task(
    name="score-baseline-shard", cache_policy=NO_CACHE, retries=SHARD_RETRIES,
    retry_delay_seconds=exponential_backoff(backoff_factor=5), retry_jitter_factor=0.5,
    task_run_name="score-baseline-shard-{work.index}",
)
def score_baseline_shard_task(method: str, options: ScorerOptions, work: BaselineShardWork) -> BaselineShardResult:
    """Score one shard's candidates with the method's scorer, rebuilt on the worker from `options`."""
    return score_baseline_shard(method, options, work)


@task(name="less-target", cache_policy=NO_CACHE)
def less_target_task(con: duckdb.DuckDBPyConnection, scorer: LessFeatureScorer, target: TargetFile) -> LessSummary:
    """Compute (or reuse) the target aggregate and write the cosine of every stored feature not yet scored."""
    return score_target(con, scorer, target)


@task(name="describe-scorer", cache_policy=NO_CACHE)
def describe_scorer_task(method: str, options: ScorerOptions) -> BaselineScorer:
    """The writer's copy of the scorer: its model's fingerprint and config (weights load only if it must score)."""
    return scorer_module(method).from_options(options)
