"""Task: score one shard on a worker (a thread, a process or a Ray task with its GPUs); no database access."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.tasks import exponential_backoff

from capsel.orchestration.shard_worker import score_shard
from capsel.orchestration.shards import ShardResult, ShardWork
from capsel.pipeline_config import ModelSpec
from capsel.scoring.config import ScoringConfig

# A GPU worker can fail for passing reasons (OOM next to another job, a preempted node): retry with backoff.
SHARD_RETRIES = 2


@task(
    name="score-shard", cache_policy=NO_CACHE, retries=SHARD_RETRIES,
    retry_delay_seconds=exponential_backoff(backoff_factor=5), retry_jitter_factor=0.5,
    task_run_name="score-shard-{work.index}",
)
def score_shard_task(spec: ModelSpec, config: ScoringConfig, batch_size: int, work: ShardWork) -> ShardResult:
    """Generate y-hat and measure the divergence profile of one shard's candidates."""
    return score_shard(spec, config, batch_size, work)
