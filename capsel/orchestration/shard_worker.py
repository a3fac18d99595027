"""The worker side of a shard: load the model once per process, score, return plain results (no database)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Callable, Hashable, TypeVar

from capsel.orchestration.shards import ShardResult, ShardWork, worker_name
from capsel.pipeline_config import ModelSpec
from capsel.scoring.config import ScoringConfig
from capsel.scoring.engine import ScoringEngine
from capsel.models.loading import ModelInfo, describe_model, load_model
from capsel.models.devices import host_device, worker_device

T = TypeVar("T")


def resolved_spec(spec: ModelSpec, uses_gpus: bool, local_cuda: bool) -> ModelSpec:
    """The spec with device and dtype fixed, so every worker computes under one model fingerprint."""
    device, dtype = worker_device(spec.device, spec.dtype, uses_gpus, local_cuda)
    return spec.model_copy(update={"device": device, "dtype": dtype})


def describe_spec(spec: ModelSpec) -> ModelInfo:
    """Model identity (fingerprint, layers, tokenizer) on the flow's host, which may have no GPU."""
    return describe_model(spec.path, dtype=spec.dtype, device=host_device(spec.device),
                          trust_remote_code=spec.trust_remote_code)


# One engine per thread: the engine observes blocks through forward hooks on its model, so two
# threads sharing a model would see each other's block outputs.
_ENGINES = threading.local()


def thread_cached(store: threading.local, key: Hashable, build: Callable[[], T]) -> T:
    """`build()`, made once per thread and kept while the key stays the same; the old one is dropped first."""
    cached = getattr(store, "entry", None)
    if cached is None or cached[0] != key:
        store.entry = None  # free the old model before loading another
        store.entry = (key, build())
    return store.entry[1]


def engine_for(spec: ModelSpec, config: ScoringConfig, batch_size: int) -> ScoringEngine:
    """A scoring engine, built once per worker thread and kept for the next shard with the same model."""

    def build() -> ScoringEngine:
        info = describe_model(
            spec.path, dtype=spec.dtype, device=spec.device, trust_remote_code=spec.trust_remote_code
        )
        return ScoringEngine(load_model(info), config, batch_size)

    return thread_cached(_ENGINES, (spec, config, batch_size), build)


def score_shard(spec: ModelSpec, config: ScoringConfig, batch_size: int, work: ShardWork) -> ShardResult:
    """Score one shard: stored y-hat compared directly, the rest generated and compared in one pass."""
    started = time.perf_counter()
    engine = engine_for(spec, config, batch_size)
    divergences = engine.score(work.stored) if work.stored else []
    scored = engine.generate_and_score(engine.prepare(work.fresh)) if work.fresh else []
    divergences += [item.divergence for item in scored]
    return ShardResult(
        index=work.index,
        model_fingerprint=engine.loaded.info.fingerprint,
        generations=[item.generation for item in scored],
        divergences=divergences,
        worker=worker_name(),
        wall_s=time.perf_counter() - started,
        excluded=dict(Counter(d.excluded_reason for d in divergences if d.excluded_reason)),
    )
