"""The worker side of a shard: load the model once per process, score, return plain results (no database)."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections import Counter

from capsel.orchestration.shards import ShardResult, ShardWork
from capsel.pipeline_config import ModelSpec
from capsel.scoring.config import ScoringConfig
from capsel.scoring.engine import ScoringEngine
from capsel.scoring.model_loading import ModelInfo, describe_model, load_model, resolve_dtype


def resolved_spec(spec: ModelSpec, uses_gpus: bool, local_cuda: bool) -> ModelSpec:
    """The spec with device and dtype fixed, so every worker computes under one model fingerprint.

    `auto` is decided once, by the flow: cuda when shards request GPUs (or this host has one).
    """
    device = spec.device
    if device == "auto":
        device = "cuda" if uses_gpus or local_cuda else "cpu"
    return spec.model_copy(update={"device": device, "dtype": resolve_dtype(spec.dtype, device)})


def describe_spec(spec: ModelSpec) -> ModelInfo:
    """Model identity (fingerprint, layers, tokenizer) on the flow's host, which may have no GPU."""
    import torch

    device = spec.device if spec.device != "cuda" or torch.cuda.is_available() else "cpu"
    return describe_model(spec.path, dtype=spec.dtype, device=device, trust_remote_code=spec.trust_remote_code)


# One engine per thread: the engine observes blocks through forward hooks on its model, so two
# threads sharing a model would see each other's block outputs.
_ENGINES = threading.local()


def engine_for(spec: ModelSpec, config: ScoringConfig, batch_size: int) -> ScoringEngine:
    """A scoring engine, built once per worker thread and kept for the next shard with the same model."""
    key = (spec, config, batch_size)
    cached = getattr(_ENGINES, "entry", None)
    if cached is None or cached[0] != key:
        _ENGINES.entry = None  # drop the old model before loading another
        info = describe_model(
            spec.path, dtype=spec.dtype, device=spec.device, trust_remote_code=spec.trust_remote_code
        )
        _ENGINES.entry = (key, ScoringEngine(load_model(info), config, batch_size))
    return _ENGINES.entry[1]


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
        worker=f"{socket.gethostname()}:{os.getpid()}",
        wall_s=time.perf_counter() - started,
        excluded=dict(Counter(d.excluded_reason for d in divergences if d.excluded_reason)),
    )
