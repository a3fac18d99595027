"""The single writer of sharded baseline scoring (LESS features included): the same window and shard runs as CAP.

Shards are pages of `baseline_pending`, read only when a slot in the window frees. Results the
scorer takes from the rows themselves (PPL from CAP's measurement) are answered here and ride
with their shard; the rest is scored by workers that rebuild the scorer from its options.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Callable, Iterator

import duckdb

from capsel.baselines.runner import BaselineSummary, BaselineTally, baseline_run, split_pending
from capsel.baselines.scorer import BaselineScorer
from capsel.baselines.store import BaselineKey, progress, write_results
from capsel.errors import CapselError
from capsel.orchestration.baseline_worker import BaselineShardResult, BaselineShardWork
from capsel.orchestration.shard_window import ResultHandle, check_fingerprint, check_window, run_window, shard_run
from capsel.scoring.runner import ProgressSink
from capsel.scoring.store import Scope, pending_chunks

BaselineDispatch = Callable[[BaselineShardWork], ResultHandle[BaselineShardResult]]


def n_shards_pending(con: duckdb.DuckDBPyConnection, scorer: BaselineScorer, shard_size: int, scope: Scope) -> int:
    """How many shards of `shard_size` the pending candidates in scope make (a rerun of a finished pool: 0)."""
    if shard_size < 1:
        raise CapselError(f"shard size must be at least 1, got {shard_size}")
    key = BaselineKey(scorer.method, scorer.identity.fingerprint, scorer.config.hash)
    n_in_scope, n_done = progress(con, key, scope)
    pending = n_in_scope - n_done if scope.limit is None else min(n_in_scope - n_done, scope.limit)
    return math.ceil(pending / shard_size)


def baseline_shards(
    con: duckdb.DuckDBPyConnection, scorer: BaselineScorer, tally: BaselineTally, shard_size: int, scope: Scope
) -> Iterator[BaselineShardWork]:
    """Pending candidates in id order, one shard per page; reusable results answered here, not by a worker."""
    pages = pending_chunks(con, "baseline_pending", tally.pending_params, scope, shard_size)
    for index, rows in enumerate(pages):
        reused, texts = split_pending(scorer, rows)
        yield BaselineShardWork(index, texts, reused)


def merge_baseline_shard(
    con: duckdb.DuckDBPyConnection, tally: BaselineTally, table: str, result: BaselineShardResult,
    prefect_flow_run_id: str | None = None,
) -> None:
    """Write one shard's results and its 'score_shard' run row in one transaction."""
    key = tally.key
    check_fingerprint(result.index, result.model_fingerprint, key.model_fingerprint)
    if result.config_hash != key.config_hash:
        raise CapselError(f"shard {result.index} was scored under config {result.config_hash}, but this run "
                          f"scores {key.config_hash}: the worker runs other capsel code")
    results = result.reused + result.scored
    counters = {
        "n_candidates": len(results), "n_reused": len(result.reused),
        "n_excluded": dict(Counter(r.excluded_reason for r in results if r.excluded_reason)),
        "worker": result.worker, "wall_s": round(result.wall_s, 3),
    }
    config = {"shard_index": result.index, "method": key.method, "config_hash": key.config_hash}
    with shard_run(con, tally.summary.run_id, key.model_fingerprint, config, counters,
                   prefect_flow_run_id) as shard_run_id:
        write_results(con, key, table, shard_run_id, results)
    if result.reused:
        tally.count(result.reused, reused=True)
    tally.count(result.scored, reused=False)


def run_sharded_baseline(
    con: duckdb.DuckDBPyConnection,
    scorer: BaselineScorer,
    shard_size: int,
    dispatch: BaselineDispatch,
    max_in_flight: int = 4,
    scope: Scope = Scope(),
    sink: ProgressSink | None = None,
    run_config: dict | None = None,
    prefect_flow_run_id: str | None = None,
) -> BaselineSummary:
    """Score every pending candidate shard by shard, as one recorded 'score-baseline' run.

    `scorer` is the writer's copy (its key and `reuse`; its model is never loaded here);
    `dispatch` sends each shard to a worker that builds its own from the same options.
    """
    check_window(max_in_flight)
    n_shards = n_shards_pending(con, scorer, shard_size, scope)
    run_config = {**(run_config or {}), "shard_size": shard_size, "n_shards_planned": n_shards}
    with baseline_run(con, scorer, scope, sink, run_config, prefect_flow_run_id=prefect_flow_run_id) as tally:
        run_window(
            baseline_shards(con, scorer, tally, shard_size, scope), dispatch,
            lambda result: merge_baseline_shard(con, tally, scorer.table, result, prefect_flow_run_id), max_in_flight,
        )
    return tally.summary
