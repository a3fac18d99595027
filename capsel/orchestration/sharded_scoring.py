"""The single writer of sharded scoring: dispatch shards to workers, merge each result in one transaction.

Workers (threads, processes, Ray tasks) only compute; this process alone writes to DuckDB.
A shard commits with its own `runs` row (kind 'score_shard'), so a crash loses at most the
shards in flight, and a rerun plans only the candidates still pending.
"""

from __future__ import annotations

from collections import deque
from typing import Callable, Protocol

import duckdb

from capsel.errors import CapselError
from capsel.orchestration.shards import ShardResult, ShardWork, load_shard, plan_shards
from capsel.runs import finish_run, start_run
from capsel.scoring.config import ScoringConfig
from capsel.scoring.model_loading import ModelInfo
from capsel.scoring.runner import ProgressSink, RunSummary, Tally, tracked_run
from capsel.scoring.store import Scope, ScoreKeys, transaction, write_divergences, write_generations


class ResultHandle(Protocol):
    """A submitted shard: a concurrent.futures or Prefect future, or anything with `result()`."""

    def result(self) -> ShardResult: ...


Dispatch = Callable[[ShardWork], ResultHandle]


def keys_for(info: ModelInfo, config: ScoringConfig) -> ScoreKeys:
    """The result keys a model and configuration write under (without registering them)."""
    return ScoreKeys(info.fingerprint, config.generation_hash, config.scoring_hash)


def merge_shard(
    con: duckdb.DuckDBPyConnection, tally: Tally, result: ShardResult, prefect_flow_run_id: str | None = None
) -> str:
    """Write one shard's rows and its 'score_shard' run row in one transaction; return the shard's run id."""
    keys = tally.keys
    if result.model_fingerprint != keys.model_fingerprint:
        raise CapselError(
            f"shard {result.index} was scored by model {result.model_fingerprint}, but this run scores "
            f"{keys.model_fingerprint}: the worker sees other model files or another dtype"
        )
    reasons = [d.excluded_reason for d in result.divergences if d.excluded_reason]
    n_generated = sum(1 for g in result.generations if g.generated_ids)
    counters = {
        "n_candidates": len(result.divergences), "n_generated": n_generated, "n_excluded": result.excluded,
        "worker": result.worker, "wall_s": round(result.wall_s, 3),
    }
    with transaction(con):
        shard_run = start_run(
            con, "score_shard", config={"shard_index": result.index}, model_fingerprint=keys.model_fingerprint,
            parent_run_id=tally.summary.run_id, prefect_flow_run_id=prefect_flow_run_id,
        )
        write_generations(con, keys, shard_run, result.generations)
        write_divergences(con, keys, shard_run, result.divergences)
        finish_run(con, shard_run, "completed", counters)
    tally.committed(len(result.divergences), reasons, n_generated=n_generated)
    return shard_run


def run_sharded_scoring(
    con: duckdb.DuckDBPyConnection,
    info: ModelInfo,
    config: ScoringConfig,
    shard_size: int,
    dispatch: Dispatch,
    max_in_flight: int = 4,
    scope: Scope = Scope(),
    sink: ProgressSink | None = None,
    run_config: dict | None = None,
    parent_run_id: str | None = None,
    prefect_flow_run_id: str | None = None,
) -> RunSummary:
    """Score every pending candidate shard by shard, as one recorded 'score' run.

    At most `max_in_flight` shards are loaded and submitted at once (memory stays bounded on
    a large pool); results are merged in submission order as they arrive.
    """
    if max_in_flight < 1:
        raise CapselError(f"max_in_flight must be at least 1, got {max_in_flight}")
    shards = plan_shards(con, keys_for(info, config), shard_size, scope)
    run_config = {**(run_config or {}), "shard_size": shard_size, "n_shards_planned": len(shards)}
    with tracked_run(
        con, "score", info, config, scope, sink, run_config,
        parent_run_id=parent_run_id, prefect_flow_run_id=prefect_flow_run_id,
    ) as tally:
        in_flight: deque[ResultHandle] = deque()
        for shard in shards:
            in_flight.append(dispatch(load_shard(con, tally.keys, shard, scope)))
            if len(in_flight) >= max_in_flight:
                merge_shard(con, tally, in_flight.popleft().result(), prefect_flow_run_id)
        while in_flight:
            merge_shard(con, tally, in_flight.popleft().result(), prefect_flow_run_id)
    return tally.summary
