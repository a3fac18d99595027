"""Incremental, resumable generate/score runs over the pool: pending rows in, whole batches committed."""

from __future__ import annotations

import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Protocol, Sequence

import duckdb
import torch

from capsel.db import transaction
from capsel.runs import recorded_run
from capsel.scoring.batching import length_sorted_batches
from capsel.scoring.config import ScoringConfig
from capsel.scoring.engine import ScoringEngine
from capsel.scoring.format_check import empty_generations, format_warnings
from capsel.scoring.generation import Generator, generation_results
from capsel.scoring.inputs import CandidateText, ScoringInput, build_inputs
from capsel.models.loading import ModelInfo
from capsel.scoring.results import GenerationResult
from capsel.scoring.store import (
    Scope, ScoreKeys, pending_chunks, progress, register, write_divergences, write_generations,
)

CHUNK_SIZE = 1024


@dataclass(frozen=True)
class BatchReport:
    """What one committed batch did: candidates written, how many measured, exclusions by reason."""

    n_candidates: int
    n_done: int
    excluded: dict[str, int]


class ProgressSink(Protocol):
    """Receives the amount of pending work, then one report per committed batch."""

    def start(self, total: int) -> None: ...

    def advance(self, report: BatchReport) -> None: ...


@dataclass
class RunSummary:
    """Counters of a finished run; also stored in its `runs` row."""

    run_id: str = ""
    n_in_scope: int = 0
    n_already_done: int = 0
    n_processed: int = 0
    n_done: int = 0
    n_generated: int = 0
    excluded: Counter = field(default_factory=Counter)
    wall_s: float = 0.0
    # Where the wall time went: model calls, and database writes (commits included).
    model_s: float = 0.0
    write_s: float = 0.0
    # What the user should know about the results, e.g. domains that lost many candidates to empty y-hat.
    notes: list[str] = field(default_factory=list)
    # torch's CPU threads when the run started (a rate means little without it)
    torch_threads: int = field(default_factory=torch.get_num_threads)

    @property
    def rate(self) -> float:
        """Candidates processed per second of wall time."""
        return self.n_processed / self.wall_s if self.wall_s > 0 else 0.0

    def counters(self) -> dict:
        """JSON-ready counters for the runs table."""
        return {
            "n_in_scope": self.n_in_scope, "n_already_done": self.n_already_done,
            "n_processed": self.n_processed, "n_done": self.n_done, "n_generated": self.n_generated,
            "n_excluded": dict(self.excluded), "wall_s": round(self.wall_s, 3),
            "model_s": round(self.model_s, 3), "write_s": round(self.write_s, 3),
            "candidates_per_s": round(self.rate, 3), "torch_threads": self.torch_threads,
        }


class Tally:
    """Keeps the summary and the runs-row counters in step with every committed batch."""

    def __init__(self, keys: ScoreKeys, sink: ProgressSink | None):
        self.keys, self.sink = keys, sink
        self.summary, self.counters, self.started = RunSummary(), {}, time.perf_counter()

    def begin(self, run_id: str, n_in_scope: int, n_already_done: int, limit: int | None) -> None:
        """Record the run id and what is in scope and already done; size the progress sink."""
        self.summary.run_id, self.summary.n_in_scope, self.summary.n_already_done = run_id, n_in_scope, n_already_done
        if self.sink:
            total = n_in_scope - n_already_done
            self.sink.start(total if limit is None else min(total, limit))

    @contextmanager
    def timing(self, phase: str) -> Iterator[None]:
        """Add the time spent inside to the summary's `<phase>_s` counter."""
        start = time.perf_counter()
        try:
            yield
        finally:
            setattr(self.summary, f"{phase}_s", getattr(self.summary, f"{phase}_s") + time.perf_counter() - start)

    def committed(self, n_candidates: int, excluded: Sequence[str], n_generated: int = 0) -> None:
        """Count one committed batch (or shard) and report it to the sink."""
        summary = self.summary
        summary.n_processed += n_candidates
        summary.n_done += n_candidates - len(excluded)
        summary.n_generated += n_generated
        summary.excluded.update(excluded)
        summary.wall_s = time.perf_counter() - self.started
        self.counters.clear()
        self.counters.update(summary.counters())
        if self.sink:
            self.sink.advance(BatchReport(n_candidates, n_candidates - len(excluded), dict(Counter(excluded))))


@contextmanager
def tracked_run(
    con: duckdb.DuckDBPyConnection, kind: str, info: ModelInfo, config: ScoringConfig, scope: Scope,
    sink: ProgressSink | None, run_config: dict | None, **start_kwargs: object,
) -> Iterator[Tally]:
    """Register model and configs, record the run in `runs`, and count what is already done.

    `start_kwargs` go to `start_run` (a flow passes its parent run and Prefect flow run id).
    """
    keys = register(con, info, config)
    tally = Tally(keys, sink)
    run_config = {
        **config.model_dump(), "generation_hash": keys.generation_hash, "scoring_hash": keys.scoring_hash,
        "domain": scope.domain, "limit": scope.limit, **(run_config or {}),
    }
    fingerprint = keys.model_fingerprint
    with recorded_run(
        con, kind, tally.counters, config=run_config, model_fingerprint=fingerprint, **start_kwargs
    ) as run_id:
        before = progress(con, keys, scope)
        done_key = "n_generated" if kind == "generate" else "n_scored"
        tally.begin(run_id, before["n_in_scope"], before[done_key], scope.limit)
        yield tally
    tally.summary.wall_s = time.perf_counter() - tally.started
    tally.summary.notes = format_warnings(
        empty_generations(con, keys.model_fingerprint, keys.generation_hash), config.prompt_format
    )


def run_generation(
    con: duckdb.DuckDBPyConnection, info: ModelInfo, generator: Generator, config: ScoringConfig,
    scope: Scope = Scope(), sink: ProgressSink | None = None, run_config: dict | None = None,
) -> RunSummary:
    """Generate y-hat for every pending candidate in scope; each batch commits generations atomically.

    A generator with a batch size above CHUNK_SIZE (vLLM) gets chunks that large, so it can
    schedule a whole batch at once instead of draining its queue every CHUNK_SIZE prompts.
    """
    chunk_size = max(CHUNK_SIZE, generator.batch_size)
    config = config.resolved(info.tokenizer)
    with tracked_run(con, "generate", info, config, scope, sink, run_config) as tally:
        keys, run_id = tally.keys, tally.summary.run_id
        for rows in pending_chunks(con, "scoring_pending_generations", keys.generation_params(), scope, chunk_size):
            inputs = build_inputs(candidate_texts(rows), info.tokenizer, config)
            for batch in _input_batches(inputs, generator.batch_size):
                with tally.timing("model"):
                    results = generation_results(batch, generator)
                with tally.timing("write"), transaction(con):
                    write_generations(con, keys, run_id, results)
                reasons = [r.excluded_reason for r in results if r.excluded_reason]
                tally.committed(len(results), reasons, n_generated=len(results) - len(reasons))
    return tally.summary


def run_scoring(
    con: duckdb.DuckDBPyConnection, engine: ScoringEngine, scope: Scope = Scope(),
    sink: ProgressSink | None = None, run_config: dict | None = None,
) -> RunSummary:
    """Score every pending candidate in scope, generating y-hat (fused) where none is stored yet."""
    with tracked_run(con, "score", engine.loaded.info, engine.config, scope, sink, run_config) as tally:
        keys, run_id = tally.keys, tally.summary.run_id
        for rows in pending_chunks(con, "scoring_pending_divergences", keys.params(), scope, CHUNK_SIZE):
            stored = [stored_generation(row) for row in rows if row["has_generation"]]
            for batch in _input_batches(stored, engine.batch_size):
                with tally.timing("model"):
                    divergences = engine.score(batch)
                with tally.timing("write"), transaction(con):
                    write_divergences(con, keys, run_id, divergences)
                tally.committed(len(divergences), _reasons(divergences))
            fresh = engine.prepare(candidate_texts([row for row in rows if not row["has_generation"]]))
            for batch in _input_batches(fresh, engine.batch_size):
                with tally.timing("model"):
                    scored = engine.generate_and_score(batch)
                divergences = [s.divergence for s in scored]
                with tally.timing("write"), transaction(con):
                    write_generations(con, keys, run_id, [s.generation for s in scored])
                    write_divergences(con, keys, run_id, divergences)
                tally.committed(len(scored), _reasons(divergences),
                                n_generated=sum(1 for s in scored if s.generation.generated_ids))
    return tally.summary


def _reasons(divergences) -> list[str]:
    return [d.excluded_reason for d in divergences if d.excluded_reason]


def _input_batches(items: Sequence[ScoringInput | GenerationResult], batch_size: int) -> list[list]:
    """Excluded items together in one batch (they never reach the model), the rest length-sorted."""
    excluded = [item for item in items if item.excluded_reason]
    eligible = [item for item in items if not item.excluded_reason]
    batches = length_sorted_batches(eligible, batch_size, lambda item: (len(item.prompt_ids), len(item.response_ids)))
    return ([excluded] if excluded else []) + batches


def candidate_texts(rows: Sequence[dict]) -> list[CandidateText]:
    """The text fields of pending rows, as the engine takes them."""
    return [CandidateText(r["candidate_id"], r["instruction"], r["input"], r["response"]) for r in rows]


def stored_generation(row: dict) -> GenerationResult:
    """A pending row's stored y-hat (from `scoring_pending_divergences`) as a generation result."""
    return GenerationResult(
        candidate_id=row["candidate_id"],
        prompt_ids=list(row["prompt_ids"] or []),
        response_ids=list(row["response_ids"] or []),
        generated_ids=None if row["generated_ids"] is None else list(row["generated_ids"]),
        excluded_reason=row["generation_excluded_reason"],
        generator="stored",
    )
