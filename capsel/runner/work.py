"""Units of scoring work and what a worker sends back; a worker builds its scorer from a spec, once per thread."""

from __future__ import annotations

import os
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, TypeVar

from capsel.methods.registry import build_scorer
from capsel.methods.scorer_spec import ScorerSpec
from capsel.models.devices import host_device, worker_device
from capsel.scorers.base import Scorer

T = TypeVar("T")

# A shard is one worker's unit, scored and committed whole, and the window its rows are sorted by length in before
# they are cut into batches. On CPU 512 keeps what a kill loses small; a GPU worker's batches are hundreds of rows,
# and 512 would give it two to sort together (pages of 8 batches scored 9.6% faster than pages of 4 on an H100,
# runner.job.BATCHES_PER_PAGE).
SHARD_SIZE = 512
GPU_SHARD_SIZE = 4096


@dataclass(frozen=True)
class Work:
    """Items for the scorer, and results the writer already took from the rows themselves (`reused`)."""

    index: int
    items: list[Any]
    reused: list[Any] = field(default_factory=list)


@dataclass(frozen=True)
class WorkResult:
    """What a worker returns: results (reused ones first) under the key its scorer computed, where and how fast."""

    index: int
    model_fingerprint: str
    config_hash: str
    results: list[Any]
    n_reused: int
    worker: str
    wall_s: float

    @property
    def scored(self) -> list[Any]:
        """The results the model computed."""
        return self.results[self.n_reused:]

    @property
    def n_reused_values(self) -> int:
        """Reused results that carry a value; a reused exclusion is counted with the exclusions instead."""
        return sum(1 for result in self.results[:self.n_reused] if not result.excluded_reason)


def worker_name() -> str:
    """host:pid of the process computing a shard, kept in the shard's runs row."""
    return f"{socket.gethostname()}:{os.getpid()}"


def score_work(scorer: Scorer, work: Work) -> WorkResult:
    """Score the work's items batch by batch with the scorer's pure `score`."""
    started = time.perf_counter()
    scored = [result for batch in scorer.batches(work.items) for result in scorer.score(batch)] if work.items else []
    return WorkResult(work.index, scorer.identity.fingerprint, scorer.config_hash, list(work.reused) + scored,
                      len(work.reused), worker_name(), time.perf_counter() - started)


# One scorer (and so one model) per thread: CAP observes blocks through forward hooks and LESS hooks its
# parameters, so threads must not share a model.
_SCORERS = threading.local()


def thread_cached(store: threading.local, key: Hashable, build: Callable[[], T]) -> T:
    """`build()`, made once per thread and kept while the key stays the same; the old one is dropped first."""
    cached = getattr(store, "entry", None)
    if cached is None or cached[0] != key:
        store.entry = None  # free the old model before loading another
        store.entry = (key, build())
    return store.entry[1]


def score_shard(spec: ScorerSpec, work: Work) -> WorkResult:
    """A worker's shard: the spec's scorer, built once per thread and kept for the next shard, scores the work."""
    return score_work(thread_cached(_SCORERS, spec, lambda: build_scorer(spec)), work)


def workers_spec(spec: ScorerSpec, uses_gpus: bool, local_cuda: bool) -> ScorerSpec:
    """The spec with every model's device and dtype fixed, so all workers score under one fingerprint."""
    return spec.with_models(lambda model: model.on(*worker_device(model.device, model.dtype, uses_gpus, local_cuda)))


def default_shard_size(spec: ScorerSpec, scorer: Scorer) -> int:
    """GPU_SHARD_SIZE when the workers' spec puts a model on a GPU, else SHARD_SIZE; SHARD_SIZE too for a
    scorer whose items carry pictures, which a worker prepares a whole shard of at once."""
    on_gpu = any(model.device.startswith("cuda") for model in spec.models().values())
    return GPU_SHARD_SIZE if on_gpu and not scorer.holds_pictures else SHARD_SIZE


def host_spec(spec: ScorerSpec) -> ScorerSpec:
    """A workers' spec as the writer's host describes it: its own device (maybe no GPU), the workers' dtype."""
    return spec.with_models(lambda model: model.on(host_device(model.device), model.dtype))
