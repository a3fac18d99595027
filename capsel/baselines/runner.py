"""Incremental, resumable baseline scoring: pending rows in, whole batches committed, counts in `runs`."""

from __future__ import annotations

import time
from dataclasses import dataclass

import duckdb

from capsel.baselines.scorer import BaselineResult, BaselineScorer
from capsel.baselines.store import known_configs, progress, register, write_results
from capsel.runs import recorded_run
from capsel.scoring.batching import length_sorted_batches
from capsel.scoring.inputs import CandidateText
from capsel.scoring.runner import BatchReport, ProgressSink, RunSummary
from capsel.scoring.store import Scope, pending_chunks, transaction

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


def run_baseline(
    con: duckdb.DuckDBPyConnection, scorer: BaselineScorer, scope: Scope = Scope(),
    sink: ProgressSink | None = None, run_config: dict | None = None,
) -> BaselineSummary:
    """Score every candidate in scope that has no result for this method, scorer and config.

    Each batch commits in its own transaction, so an interrupted run keeps what it finished and a
    rerun does only what is missing.
    """
    key = register(con, scorer)
    summary, counters, started = BaselineSummary(), {}, time.perf_counter()
    config = {
        "method": scorer.method, **scorer.config.as_dict(), "config_hash": key.config_hash,
        "batch_size": scorer.batch_size, "domain": scope.domain, "limit": scope.limit, **(run_config or {}),
    }
    reusable = {"cap_config_hashes": scorer.reusable_cap_configs(known_configs(con))}
    with recorded_run(con, "score-baseline", counters, config=config, model_fingerprint=key.model_fingerprint) as run_id:
        summary.run_id = run_id
        summary.n_in_scope, summary.n_already_done = progress(con, key, scope)
        if sink:
            pending = summary.n_in_scope - summary.n_already_done
            sink.start(pending if scope.limit is None else min(pending, scope.limit))

        def commit(results: list[BaselineResult], reused: bool) -> None:
            with transaction(con):
                write_results(con, key, scorer.table, run_id, results)
            report = summary.add(results, reused, started)
            counters.update(summary.counters())
            if sink:
                sink.advance(report)

        for rows in pending_chunks(con, "baseline_pending", {**key.params(), **reusable}, scope, CHUNK_SIZE):
            answered = {row["candidate_id"]: scorer.reuse(row) for row in rows}
            reused = [result for result in answered.values() if result is not None]
            if reused:
                commit(reused, reused=True)
            texts = [
                CandidateText(row["candidate_id"], row["instruction"], row["input"], row["response"])
                for row in rows if answered[row["candidate_id"]] is None
            ]
            for batch in length_sorted_batches(texts, scorer.batch_size, _text_length):
                commit(scorer.score(batch), reused=False)
    summary.wall_s = time.perf_counter() - started
    return summary


def _text_length(candidate: CandidateText) -> int:
    return len(candidate.instruction) + len(candidate.input) + len(candidate.response)
