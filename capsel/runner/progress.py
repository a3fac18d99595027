"""What a scoring run reports as it goes (to a progress sink) and when it ends (its summary and runs counters)."""

from __future__ import annotations

import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Protocol, Sequence

from capsel.db.progress_file import report_progress
from capsel.threads import current_torch_threads


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
    n_generated: int = 0       # CAP: y-hat generated on the way
    n_reused: int = 0          # values answered without the model (PPL from CAP's measurement)
    excluded: Counter = field(default_factory=Counter)
    wall_s: float = 0.0
    # Where the wall time went: model calls, and database writes (commits included).
    model_s: float = 0.0
    write_s: float = 0.0
    # What the user should know about the results, e.g. domains that lost many candidates to empty y-hat.
    notes: list[str] = field(default_factory=list)
    # torch's CPU threads when the run started (a rate means little without it)
    torch_threads: int = field(default_factory=current_torch_threads)

    @property
    def rate(self) -> float:
        """Candidates processed per second of wall time."""
        return self.n_processed / self.wall_s if self.wall_s > 0 else 0.0

    def counters(self) -> dict:
        """JSON-ready counters for the runs table."""
        return {
            "n_in_scope": self.n_in_scope, "n_already_done": self.n_already_done,
            "n_processed": self.n_processed, "n_done": self.n_done, "n_generated": self.n_generated,
            "n_reused": self.n_reused, "n_excluded": dict(self.excluded), "wall_s": round(self.wall_s, 3),
            "model_s": round(self.model_s, 3), "write_s": round(self.write_s, 3),
            "candidates_per_s": round(self.rate, 3), "torch_threads": self.torch_threads,
        }


class Tally:
    """Keeps the summary and the runs-row counters in step with every committed batch."""

    def __init__(self, sink: ProgressSink | None):
        self.sink = sink
        self.summary, self.started = RunSummary(), time.perf_counter()
        self.counters: dict = {}

    def begin(self, run_id: str, n_in_scope: int, n_already_done: int, total: int) -> None:
        """Record the run id and what is in scope and already done; size the progress sink to the `total` this run
        will process."""
        self.summary.run_id, self.summary.n_in_scope, self.summary.n_already_done = run_id, n_in_scope, n_already_done
        report_progress(done=0, total=total)
        if self.sink:
            self.sink.start(total)

    @contextmanager
    def timing(self, phase: str) -> Iterator[None]:
        """Add the time spent inside to the summary's `<phase>_s` counter."""
        start = time.perf_counter()
        try:
            yield
        finally:
            setattr(self.summary, f"{phase}_s", getattr(self.summary, f"{phase}_s") + time.perf_counter() - start)

    def committed(self, n_candidates: int, excluded: Sequence[str], n_generated: int = 0, n_reused: int = 0) -> None:
        """Count one committed batch (or shard) and report it to the sink."""
        summary = self.summary
        summary.n_processed += n_candidates
        summary.n_done += n_candidates - len(excluded)
        summary.n_generated += n_generated
        summary.n_reused += n_reused
        summary.excluded.update(excluded)
        summary.wall_s = time.perf_counter() - self.started
        self.counters.clear()
        self.counters.update(summary.counters())
        report_progress(advance=n_candidates)
        if self.sink:
            self.sink.advance(BatchReport(n_candidates, n_candidates - len(excluded), dict(Counter(excluded))))

    def finished(self) -> RunSummary:
        """The summary with its final wall time."""
        self.summary.wall_s = time.perf_counter() - self.started
        return self.summary
