"""Classify framed batches in worker processes while the caller writes earlier chunks to DuckDB."""

from __future__ import annotations

import multiprocessing
import signal
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from typing import Iterator

from capsel.ingest.chunks import Chunk, ClassifyConfig, classify_batch
from capsel.ingest.readers import Batch


def _leave_ctrl_c_to_parent() -> None:
    # Ctrl-C reaches the whole process group; only the parent should act on it (roll back, then
    # shut the pool down), or workers dying mid-task leave the parent waiting on a broken pool.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextmanager
def worker_pool(n_workers: int) -> Iterator[ProcessPoolExecutor | None]:
    """A pool of `n_workers` parse processes, or None to classify in this process."""
    if n_workers < 1:
        yield None
        return
    # spawn, not fork: the parent holds DuckDB and Arrow thread pools that a fork would copy mid-flight.
    pool = ProcessPoolExecutor(
        n_workers, mp_context=multiprocessing.get_context("spawn"), initializer=_leave_ctrl_c_to_parent
    )
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def classified_chunks(
    batches: Iterator[Batch],
    suffix: str,
    config: ClassifyConfig,
    pool: ProcessPoolExecutor | None,
    max_in_flight: int = 4,
) -> Iterator[Chunk]:
    """Chunks in file order; with a pool, at most `max_in_flight` batches are queued (bounded memory)."""
    if pool is None:
        for batch in batches:
            yield classify_batch(suffix, batch, config)
        return
    in_flight: deque[Future[Chunk]] = deque()
    for batch in batches:
        in_flight.append(pool.submit(classify_batch, suffix, batch, config))
        if len(in_flight) >= max_in_flight:
            yield in_flight.popleft().result()
    while in_flight:
        yield in_flight.popleft().result()
