"""Incremental, resumable baseline scoring: pending rows in, whole batches committed, counts in `runs`."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Sequence

import duckdb

from capsel.baselines.scorer import BaselineResult, BaselineScorer
from capsel.baselines.store import BaselineKey, known_configs, progress, register, write_results
from capsel.runs import recorded_run
from capsel.scoring.batching import length_sorted_batches
from capsel.scoring.inputs import CandidateText
from capsel.scoring.runner import BatchReport, ProgressSink, RunSummary
from capsel.db import transaction
from capsel.scoring.store import Scope, pending_chunks

CHUNK_SIZE = 1024


@dataclass
class BaselineSummary(RunSummary):
    """Counters of a finished baseline run; `n_reused` were answered without the model (PPL from CAP)."""

    n_reused: int = 0

    def counters(self) -> dict:
        """JSON-ready counters for the runs table."""
        counters = super().counters()
        counters.pop("n_generated")
        return {**counters, "n_reused": self.n_reused}

    def add(self, results: list[BaselineResult], reused: bool, started: float) -> BatchReport:
        """Count one committed batch and say what it did."""
        reasons = [result.excluded_reason for result in results if result.excluded_reason]
        self.n_processed += len(results)
        self.n_done += len(results) - len(reasons)
        self.n_reused += len(results) if reused else 0
        self.excluded.update(reasons)
        self.wall_s = time.perf_counter() - started
        return BatchReport(len(results), len(results) - len(reasons), {r: reasons.count(r) for r in set(reasons)})


class BaselineTally:
    """One 'score-baseline' run in progress: its key, pending-row parameters and counters kept in step."""

    def __init__(self, key: BaselineKey, cap_config_hashes: list[str], sink: ProgressSink | None):
        self.key, self.sink = key, sink
        self.pending_params = {**key.params(), "cap_config_hashes": cap_config_hashes}
        self.summary, self.counters, self.started = BaselineSummary(), {}, time.perf_counter()

    def count(self, results: list[BaselineResult], reused: bool) -> None:
        """Count results just committed and report them to the sink."""
        report = self.summary.add(results, reused, self.started)
        self.counters.update(self.summary.counters())
        if self.sink:
            self.sink.advance(report)


@contextmanager
def baseline_run(
    con: duckdb.DuckDBPyConnection, scorer: BaselineScorer, scope: Scope, sink: ProgressSink | None,
    run_config: dict | None, **start_kwargs: object,
) -> Iterator[BaselineTally]:
    """Register the scorer, record a 'score-baseline' run and count what is already done.

    `start_kwargs` go to `start_run` (a flow passes its Prefect flow run id).
    """
    key = register(con, scorer)
    tally = BaselineTally(key, scorer.reusable_cap_configs(known_configs(con)), sink)
    config = {
        "method": scorer.method, **scorer.config.as_dict(), "config_hash": key.config_hash,
        "batch_size": scorer.batch_size, "domain": scope.domain, "limit": scope.limit, **(run_config or {}),
    }
    summary = tally.summary
    with recorded_run(con, "score-baseline", tally.counters, config=config, model_fingerprint=key.model_fingerprint,
                      **start_kwargs) as run_id:
        summary.run_id = run_id
        summary.n_in_scope, summary.n_already_done = progress(con, key, scope)
        if sink:
            pending = summary.n_in_scope - summary.n_already_done
            sink.start(pending if scope.limit is None else min(pending, scope.limit))
        yield tally
    summary.wall_s = time.perf_counter() - tally.started


def run_baseline(
    con: duckdb.DuckDBPyConnection, scorer: BaselineScorer, scope: Scope = Scope(),
    sink: ProgressSink | None = None, run_config: dict | None = None,
) -> BaselineSummary:
    """Score every candidate in scope that has no result for this method, scorer and config.

    Each batch commits in its own transaction, so an interrupted run keeps what it finished and a
    rerun does only what is missing.
    """
    with baseline_run(con, scorer, scope, sink, run_config) as tally:

        def commit(results: list[BaselineResult], reused: bool) -> None:
            with transaction(con):
                write_results(con, tally.key, scorer.table, tally.summary.run_id, results)
            tally.count(results, reused)

        for rows in pending_chunks(con, "baseline_pending", tally.pending_params, scope, CHUNK_SIZE):
            reused, texts = split_pending(scorer, rows)
            if reused:
                commit(reused, reused=True)
            for batch in text_batches(texts, scorer.batch_size):
                commit(scorer.score(batch), reused=False)
    return tally.summary


def split_pending(scorer: BaselineScorer, rows: Sequence[dict]) -> tuple[list[BaselineResult], list[CandidateText]]:
    """(results the scorer takes from the rows themselves, texts its model must score)."""
    answered = {row["candidate_id"]: scorer.reuse(row) for row in rows}
    reused = [result for result in answered.values() if result is not None]
    texts = [
        CandidateText(row["candidate_id"], row["instruction"], row["input"], row["response"])
        for row in rows if answered[row["candidate_id"]] is None
    ]
    return reused, texts


def text_batches(texts: Sequence[CandidateText], batch_size: int) -> list[list[CandidateText]]:
    """Batches of similar total text length, so padding stays small."""
    return length_sorted_batches(texts, batch_size, _text_length)


def _text_length(candidate: CandidateText) -> int:
    return len(candidate.instruction) + len(candidate.input) + len(candidate.response)
