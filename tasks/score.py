"""Tasks of scoring: one shard on a worker (no database access), and the writer's copy of the scorer."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.tasks import exponential_backoff

from capsel.methods.registry import build_scorer
from capsel.methods.scorer_spec import ScorerSpec
from capsel.runner.work import Work, WorkResult, host_spec, score_shard
from capsel.scorers.base import Scorer

# A GPU worker can fail for passing reasons (OOM next to another job, a preempted node): retry with backoff.
SHARD_RETRIES = 2


@task(
    name="score-shard", cache_policy=NO_CACHE, retries=SHARD_RETRIES,
    retry_delay_seconds=exponential_backoff(backoff_factor=5), retry_jitter_factor=0.5,
    task_run_name="score-shard-{work.index}",
)
def score_shard_task(spec: ScorerSpec, work: Work) -> WorkResult:
    """Score one shard's candidates with the method's scorer, built on the worker from `spec`."""
    return score_shard(spec, work)


@task(name="describe-scorer", cache_policy=NO_CACHE)
def describe_scorer_task(spec: ScorerSpec) -> Scorer:
    """The writer's copy of the scorer on this host: its model's fingerprint and config (weights not loaded)."""
    return build_scorer(host_spec(spec))
