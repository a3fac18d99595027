"""The single writer of every scoring job, CAP and baselines alike: pending pages out, results merged atomically.

In-process (no `dispatch`), the writer's own scorer scores each batch and each batch commits on its own, so
Ctrl-C loses at most the batch in flight; this is datatrove's trick of running one worker through the same
code as many. With `dispatch` (a flow's threads or Ray tasks), each page is one shard scored by a worker that
builds its scorer from a spec, and each merged shard commits with its own 'score_shard' runs row. A rerun
finds only what is still pending either way.
"""

from __future__ import annotations

import itertools
import math
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator

import duckdb

from capsel.cap_engine.result_notes import result_notes
from capsel.db import transaction
from capsel.db.checkpoint import release_indexes
from capsel.errors import CapselError, OptionError
from capsel.faults import fault_point
from capsel.runner.progress import ProgressSink, RunSummary, Tally
from capsel.runner.window import Done, ResultHandle, check_fingerprint, check_window, run_window, shard_run
from capsel.runner.work import Work, WorkResult, score_work
from capsel.runs import recorded_run
from capsel.scorers.base import Counted, Scorer
from capsel.store.results import ResultKey, pending_query, progress, register, result_key, write_results
from capsel.store.scope import PendingQuery, Scope, pending_pages

PAGE_SIZE = 1024
# In-process a page is also the window whose rows are sorted by length before they are cut into batches, and a batch
# pads every prompt to its longest: the more batches a page holds, the less they pad. On an H100 (8B shape, batch
# 256, the realistic pool) 8 batches a page scored 9.6% faster than the 4 of PAGE_SIZE, in one call; on that pool
# the padded prompt tokens are 1.26 times the real ones at 4 batches a page, 1.13 at 8 and 1.07 at 16
# (benchmarks/README.md, 2026-11-27). Commits stay per batch, so a bigger page loses nothing more to Ctrl-C.
BATCHES_PER_PAGE = 16
Dispatch = Callable[[Work], ResultHandle[WorkResult]]


def run_scorer(
    con: duckdb.DuckDBPyConnection,
    scorer: Scorer,
    scope: Scope = Scope(),
    sink: ProgressSink | None = None,
    run_config: dict | None = None,
    *,
    dispatch: Dispatch | None = None,
    page_size: int | None = None,
    max_in_flight: int = 4,
    parent_run_id: str | None = None,
    prefect_flow_run_id: str | None = None,
) -> RunSummary:
    """Score every candidate in scope that has no result for the scorer's method, model and config.

    `scorer` is the writer's copy: it keys the run, pages the pending rows and (in-process) scores them;
    with `dispatch` its model is never loaded here. `page_size`: candidates per page (per shard with `dispatch`);
    by default PAGE_SIZE, or in-process BATCHES_PER_PAGE of the scorer's batches where that is more (default_page_size).
    """
    check_window(max_in_flight)
    if page_size is None:
        page_size = default_page_size(scorer, dispatched=dispatch is not None)
    if page_size < 1:
        raise OptionError(f"shard size must be at least 1, got {page_size}")
    with scoring_run(con, scorer, scope, sink, run_config, page_size, parent_run_id=parent_run_id,
                     prefect_flow_run_id=prefect_flow_run_id) as (tally, key, pending):
        sharded = dispatch is not None

        def inline(work: Work) -> Done[WorkResult]:
            with tally.timing("model"):
                return Done(score_work(scorer, work))

        def commit(result: WorkResult) -> None:
            _commit(con, tally, key, scorer, result, sharded, prefect_flow_run_id)

        pages = pending_pages(con, pending, scope, page_size)
        run_window(page_works(scorer, pages, per_batch=not sharded), dispatch or inline, commit,
                   max_in_flight if sharded else 1)
    summary = tally.finished()
    if summary.n_processed:
        release_indexes(con)
    summary.notes = result_notes(con, key.model_fingerprint, key.config_hash, key.generation_hash,
                                 scorer.prompt_format)
    return summary


@contextmanager
def scoring_run(
    con: duckdb.DuckDBPyConnection, scorer: Scorer, scope: Scope, sink: ProgressSink | None,
    run_config: dict | None, page_size: int, **start_kwargs: object,
) -> Iterator[tuple[Tally, ResultKey, PendingQuery]]:
    """Count what is already done, page what is pending, register the scorer and record the run (kind
    `scorer.run_kind`). Paging before registering changes nothing: the configs a scorer may reuse are other
    methods' (CAP's for PPL), never its own."""
    key = result_key(scorer)
    n_in_scope, n_done = progress(con, scorer, key, scope)
    pending_rows = pending_query(con, scorer, key)
    register(con, scorer)
    tally = Tally(sink)
    pending = n_in_scope - n_done if scope.limit is None else min(n_in_scope - n_done, scope.limit)
    config = {**scorer.run_config(), "domain": scope.domain, "limit": scope.limit, "shard_size": page_size,
              "n_shards_planned": math.ceil(pending / page_size), **(run_config or {})}
    with recorded_run(con, scorer.run_kind, tally.counters, config=config, model_fingerprint=key.model_fingerprint,
                      **start_kwargs) as run_id:
        tally.begin(run_id, n_in_scope, n_done, pending)
        yield tally, key, pending_rows


def split_pending(scorer: Scorer, rows: list[dict]) -> tuple[list, list]:
    """(items the model must score, results the scorer takes from the rows themselves)."""
    answered = {row["candidate_id"]: scorer.reuse(row) for row in rows}
    items = [scorer.item(row) for row in rows if answered[row["candidate_id"]] is None]
    return items, [result for result in answered.values() if result is not None]


def default_page_size(scorer: Scorer, dispatched: bool) -> int:
    """PAGE_SIZE per dispatched shard; in-process BATCHES_PER_PAGE of the scorer's batches, where that is more,
    unless its items carry pictures: a page of 16 batches of a small VLM's would hold gigabytes of them."""
    if dispatched or scorer.holds_pictures:
        return PAGE_SIZE
    return max(PAGE_SIZE, BATCHES_PER_PAGE * scorer.batch_size)


def page_works(scorer: Scorer, pages: Iterable[list[dict]], per_batch: bool) -> Iterator[Work]:
    """Per page one work, a dispatched shard; or in-process (`per_batch`) the page's reused results first, then one
    work per batch of its items."""
    numbers = itertools.count()
    for rows in pages:
        items, reused = split_pending(scorer, rows)
        if not per_batch:
            yield Work(next(numbers), items, reused)
            continue
        if reused:
            yield Work(next(numbers), [], reused)
        for batch in scorer.batches(items):
            yield Work(next(numbers), batch)


def _commit(
    con: duckdb.DuckDBPyConnection, tally: Tally, key: ResultKey, scorer: Scorer, result: WorkResult, sharded: bool,
    prefect_flow_run_id: str | None,
) -> None:
    """Write one work's results in one transaction, then count them: in-process a batch under the scoring run
    itself; a dispatched shard, checked first, under its own 'score_shard' runs row."""
    counted = scorer.counted(result.scored)
    writing = _written_under(con, tally, key, result, counted, sharded, prefect_flow_run_id)
    with tally.timing("write"), writing as run_id:
        write_results(con, key, scorer.table, run_id, result.results)
        fault_point("score.before_commit")
    fault_point("score.after_commit")
    reused = [r.excluded_reason for r in result.results[:result.n_reused] if r.excluded_reason]
    tally.committed(len(result.results), reused + counted.excluded, counted.n_generated, result.n_reused_values)


@contextmanager
def _written_under(
    con: duckdb.DuckDBPyConnection, tally: Tally, key: ResultKey, result: WorkResult, counted: Counted,
    sharded: bool, prefect_flow_run_id: str | None,
) -> Iterator[str]:
    """The transaction a work's results are written in, and the run id they carry."""
    if not sharded:
        with transaction(con):
            yield tally.summary.run_id
        return
    check_fingerprint(result.index, result.model_fingerprint, key.model_fingerprint)
    if result.config_hash != key.config_hash:
        raise CapselError(f"shard {result.index} was scored under config {result.config_hash}, but this run "
                          f"scores {key.config_hash}: the worker runs other capsel code")
    counters = {"n_candidates": len(result.results), "n_reused": result.n_reused_values,
                "n_generated": counted.n_generated,
                "n_excluded": _reasons(result), "worker": result.worker, "wall_s": round(result.wall_s, 3)}
    config = {"shard_index": result.index, "method": key.method, "config_hash": key.config_hash}
    with shard_run(con, tally.summary.run_id, key.model_fingerprint, config, counters,
                   prefect_flow_run_id) as shard_run_id:
        yield shard_run_id


def _reasons(result: WorkResult) -> dict[str, int]:
    reasons: dict[str, int] = {}
    for item in result.results:
        if item.excluded_reason:
            reasons[item.excluded_reason] = reasons.get(item.excluded_reason, 0) + 1
    return reasons
