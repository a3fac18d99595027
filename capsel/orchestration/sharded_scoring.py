"""The single writer of sharded CAP scoring: shards of pending candidates out, each result merged atomically.

The window and the per-shard transaction are shared with baseline shards (`shard_window`).
"""

from __future__ import annotations

from typing import Callable

import duckdb

from capsel.orchestration.shard_window import (
    ResultHandle, check_fingerprint, check_window, run_window, shard_run,
)
from capsel.orchestration.shards import ShardResult, ShardWork, load_shard, plan_shards
from capsel.scoring.config import ScoringConfig
from capsel.models.loading import ModelInfo
from capsel.scoring.runner import ProgressSink, RunSummary, Tally, tracked_run
from capsel.scoring.store import Scope, ScoreKeys, write_divergences, write_generations

Dispatch = Callable[[ShardWork], ResultHandle[ShardResult]]


def keys_for(info: ModelInfo, config: ScoringConfig) -> ScoreKeys:
    """The result keys a model and configuration write under (without registering them)."""
    config = config.resolved(info.tokenizer)
    return ScoreKeys(info.fingerprint, config.generation_hash, config.scoring_hash)


def merge_shard(
    con: duckdb.DuckDBPyConnection, tally: Tally, result: ShardResult, prefect_flow_run_id: str | None = None
) -> None:
    """Write one shard's rows and its 'score_shard' run row in one transaction."""
    keys = tally.keys
    check_fingerprint(result.index, result.model_fingerprint, keys.model_fingerprint)
    reasons = [d.excluded_reason for d in result.divergences if d.excluded_reason]
    n_generated = sum(1 for g in result.generations if g.generated_ids)
    counters = {
        "n_candidates": len(result.divergences), "n_generated": n_generated, "n_excluded": result.excluded,
        "worker": result.worker, "wall_s": round(result.wall_s, 3),
    }
    with shard_run(con, tally.summary.run_id, keys.model_fingerprint, {"shard_index": result.index}, counters,
                   prefect_flow_run_id) as shard_run_id:
        write_generations(con, keys, shard_run_id, result.generations)
        write_divergences(con, keys, shard_run_id, result.divergences)
    tally.committed(len(result.divergences), reasons, n_generated=n_generated)


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

    At most `max_in_flight` shards are loaded and submitted at once; results are merged in
    submission order as they arrive.
    """
    check_window(max_in_flight)
    config = config.resolved(info.tokenizer)
    shards = plan_shards(con, keys_for(info, config), shard_size, scope)
    run_config = {**(run_config or {}), "shard_size": shard_size, "n_shards_planned": len(shards)}
    with tracked_run(
        con, "score", info, config, scope, sink, run_config,
        parent_run_id=parent_run_id, prefect_flow_run_id=prefect_flow_run_id,
    ) as tally:
        run_window(
            (load_shard(con, tally.keys, shard, scope) for shard in shards), dispatch,
            lambda result: merge_shard(con, tally, result, prefect_flow_run_id), max_in_flight,
        )
    return tally.summary
