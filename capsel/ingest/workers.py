"""Classify framed batches in worker processes while the caller writes earlier chunks to DuckDB.

Workers hand their chunks back as Arrow IPC files in a scratch folder, which the caller
memory-maps: a chunk's texts are never pickled through a pipe (that cost the caller more
CPU than its DuckDB writes).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, NamedTuple

import pyarrow as pa

from capsel.ingest.chunks import Chunk, ClassifyConfig, classify_batch
from capsel.ingest.readers import Batch
from capsel.ingest.scratch import remove_stale_scratch, scratch_folder
from capsel.processes import die_with_parent


class SpilledChunk(NamedTuple):
    """A chunk a worker wrote to disk: its candidate and quarantine tables as Arrow IPC files."""

    staged: str
    quarantined: str
    n_rows: int
    n_blank_lines: int


class ParseWorkers(NamedTuple):
    """Parse processes and the scratch folder their chunks come back through."""

    pool: ProcessPoolExecutor
    scratch: str


def _start_worker(parent_pid: int) -> None:
    """Worker start-up: die with the parent, even a SIGKILLed one, and leave Ctrl-C to it."""
    die_with_parent(parent_pid)
    # Ctrl-C reaches the whole process group; only the parent should act on it (roll back, then
    # shut the pool down), or workers dying mid-task leave the parent waiting on a broken pool.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _started() -> None:
    """Nothing: a worker that ran it has imported this module and everything classifying needs."""


@contextmanager
def worker_pool(n_workers: int) -> Iterator[ParseWorkers | None]:
    """`n_workers` parse processes with a scratch folder, or None to classify in this process.

    Either way, scratch folders that killed ingests left behind go first.
    """
    remove_stale_scratch()
    if n_workers < 1:
        yield None
        return
    with scratch_folder() as scratch:
        # spawn, not fork: the parent holds DuckDB and Arrow thread pools that a fork would copy mid-flight.
        pool = ProcessPoolExecutor(n_workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_start_worker, initargs=(os.getpid(),))
        try:
            # Start every worker now, so their interpreters and imports overlap the file's sha256 pass.
            for _ in range(n_workers):
                pool.submit(_started)
            yield ParseWorkers(pool, scratch)
        finally:
            # Workers stop first: after an error, chunks still in flight would write into a removed folder.
            pool.shutdown(wait=True, cancel_futures=True)


def classified_chunks(
    batches: Iterator[Batch],
    suffix: str,
    config: ClassifyConfig,
    workers: ParseWorkers | None,
    max_in_flight: int = 4,
) -> Iterator[Chunk]:
    """Chunks in file order; with workers, at most `max_in_flight` batches are queued (bounded memory)."""
    if workers is None:
        for batch in batches:
            yield classify_batch(suffix, batch, config)
        return
    in_flight: deque[Future[SpilledChunk]] = deque()
    for number, batch in enumerate(batches):
        stem = os.path.join(workers.scratch, str(number))
        in_flight.append(workers.pool.submit(classify_to_files, suffix, batch, config, stem))
        if len(in_flight) >= max_in_flight:
            yield load_spilled(in_flight.popleft().result())
    while in_flight:
        yield load_spilled(in_flight.popleft().result())


def classify_to_files(suffix: str, batch: Batch, config: ClassifyConfig, stem: str) -> SpilledChunk:
    """Classify a batch (in a worker) and write its tables next to `stem` as Arrow IPC files."""
    chunk = classify_batch(suffix, batch, config)
    paths = []
    for name, table in (("staged", chunk.staged), ("quarantined", chunk.quarantined)):
        path = f"{stem}.{name}.arrow"
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        paths.append(path)
    return SpilledChunk(paths[0], paths[1], chunk.n_rows, chunk.n_blank_lines)


def load_spilled(spilled: SpilledChunk) -> Chunk:
    """Memory-map a spilled chunk's tables and remove its files (the mapping outlives the names)."""
    tables = []
    for path in (spilled.staged, spilled.quarantined):
        # No `with`: the table's buffers keep the mapping alive after this function returns.
        tables.append(pa.ipc.open_file(pa.memory_map(path)).read_all())
        Path(path).unlink()
    return Chunk(tables[0], tables[1], spilled.n_rows, spilled.n_blank_lines)
