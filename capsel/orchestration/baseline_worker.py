"""The worker side of a baseline shard: rebuild the scorer from its options once per thread, score, return rows."""

from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass, field

from capsel.baselines.registry import scorer_module
from capsel.baselines.runner import text_batches
from capsel.baselines.scorer import BaselineResult, BaselineScorer, ScorerOptions
from capsel.orchestration.shard_worker import thread_cached
from capsel.orchestration.shards import worker_name
from capsel.scoring.inputs import CandidateText
from capsel.models.devices import host_device, worker_device


@dataclass(frozen=True)
class BaselineShardWork:
    """What a worker scores (`texts`), and the results the writer already took from the rows (`reused`)."""

    index: int
    texts: list[CandidateText]
    reused: list[BaselineResult] = field(default_factory=list)


@dataclass(frozen=True)
class BaselineShardResult:
    """What a worker returns: results under the key its scorer computed, and where and how fast."""

    index: int
    model_fingerprint: str
    config_hash: str
    reused: list[BaselineResult]
    scored: list[BaselineResult]
    worker: str
    wall_s: float


def resolved_options(options: ScorerOptions, uses_gpus: bool, local_cuda: bool) -> ScorerOptions:
    """The options with device and dtype fixed, so every worker scores under one model fingerprint."""
    device, dtype = worker_device(options.device, options.dtype, uses_gpus, local_cuda)
    return dataclasses.replace(options, device=device, dtype=dtype)


def host_options(options: ScorerOptions) -> ScorerOptions:
    """Resolved options as the flow's host builds the scorer: its own device (maybe no GPU), the workers' dtype."""
    return dataclasses.replace(options, device=host_device(options.device))


# One scorer (and so one model) per thread: LESS hooks its model's parameters, which threads must not share.
_SCORERS = threading.local()


def scorer_for(method: str, options: ScorerOptions) -> BaselineScorer:
    """The method's scorer, built once per worker thread and kept for the next shard with the same options."""
    return thread_cached(_SCORERS, (method, options), lambda: scorer_module(method).from_options(options))


def score_baseline_shard(method: str, options: ScorerOptions, work: BaselineShardWork) -> BaselineShardResult:
    """Score one shard's texts batch by batch with the pure `score(batch)` of the method's scorer."""
    started = time.perf_counter()
    scorer = scorer_for(method, options)
    scored = [result for batch in text_batches(work.texts, scorer.batch_size) for result in scorer.score(batch)]
    return BaselineShardResult(
        index=work.index, model_fingerprint=scorer.identity.fingerprint, config_hash=scorer.config.hash,
        reused=work.reused, scored=scored, worker=worker_name(), wall_s=time.perf_counter() - started,
    )
