"""Ingest source files into the DuckDB pool, one transaction per unit, dedup done in SQL per chunk.

A unit is one file, or the whole run under --sample (the draw spans every file of the run,
so its files commit together). A crash inside a unit leaves nothing of it behind, and a
rerun ingests it cleanly because its sources rows were never committed.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import BinaryIO, Callable, Iterator, Sequence

import duckdb
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from capsel.db import first_row, one_row, run_sql, sql_text, transaction
from capsel.db.progress_file import report_progress, report_stage
from capsel.errors import CapselError, OptionError
from capsel.faults import fault_point
from capsel.image_store.database import database_image_root
from capsel.ingest.chunks import Chunk, ClassifyConfig, only_rows
from capsel.ingest.dedup_key import DEDUP_KEY_MODES, DedupKeyMode
from capsel.ingest.field_hint import field_hints
from capsel.ingest.file_outcome import FileOutcome
from capsel.ingest.image_access import ImageAccess
from capsel.ingest.image_loading import ImageConfig
from capsel.ingest.inputs import EMPTY_FILE, InputFile, Skipped, input_size, resolve_inputs
from capsel.ingest.local_copy import LocalCopy, local_copy
from capsel.ingest.readers import FORMATS, Batch, bytes_through
from capsel.ingest.records import FieldMap
from capsel.ingest.summary import IngestReport, run_summary
from capsel.ingest.workers import ParseWorkers, classified_chunks, worker_pool
from capsel.runs import finish_run, recorded_run

# (file, bytes done, bytes total), called after every chunk is written.
# (input, step, bytes done, bytes in all): step is 'download' for an object in storage, then 'ingest'
ProgressFn = Callable[[InputFile, str, int, int], None]
# What two rows must share to be one candidate: the paper's normalised question, or that and the images too.


@dataclass(frozen=True)
class IngestOptions:
    """How to read and keep rows: domain override, field names, sampling, limits and parallelism.

    workers > 0 parses in spawned processes, which import the caller's main module: call
    from a script guarded by `if __name__ == "__main__":` (the CLI is).
    """

    domain: str | None = None
    fields: FieldMap = field(default_factory=FieldMap)
    sample_size: int | None = None
    seed: int = 0
    # A file already ingested has its quarantined rows read again under these options (and only those).
    reingest: bool = False
    max_field_chars: int = 1_000_000
    chunk_rows: int = 50_000
    workers: int = 0
    # Below this much input, starting worker processes (about a second) costs more than it saves.
    parallel_min_bytes: int = 32 * 2**20
    dedup_key: DedupKeyMode = "text"
    max_image_bytes: int = 20 * 2**20
    # Pillow's own decompression-bomb threshold (Image.MAX_IMAGE_PIXELS)
    max_image_pixels: int = 89_478_485
    # Where images may come from besides each pool file's own folder or prefix: the operator's, never a row's.
    image_access: ImageAccess = ImageAccess()
    max_images_per_row: int = 64
    max_row_image_bytes: int = 64 * 2**20

    def __post_init__(self) -> None:
        if self.domain is not None:
            if not self.domain.strip():
                raise CapselError("[[domain]] must not be empty")
            object.__setattr__(self, "domain", self.domain.strip())
        if self.sample_size is not None and self.sample_size < 1:
            raise OptionError(f"[[sample_size]] must be at least 1, got {self.sample_size}")
        if self.reingest and self.sample_size is not None:
            raise OptionError("[[reingest]] retries quarantined rows one by one; it cannot draw a [[sample_size]]")
        if self.chunk_rows < 1 or self.max_field_chars < 1 or self.workers < 0:
            raise OptionError("chunk_rows and max_field_chars must be positive, workers at least 0")
        if self.dedup_key not in DEDUP_KEY_MODES:
            raise OptionError(f"[[dedup_key]] must be one of {', '.join(DEDUP_KEY_MODES)}, got {self.dedup_key!r}")
        if min(self.max_image_bytes, self.max_image_pixels, self.max_images_per_row, self.max_row_image_bytes) < 1:
            raise OptionError("max_image_bytes, max_image_pixels, max_images_per_row and max_row_image_bytes must be "
                              "positive")

    def classify_config(self, image_root: Path | None = None, image_base: str = ".") -> ClassifyConfig:
        """The part of the options that decides each row's fate, for a file in `image_base` (the folder or URL
        prefix its relative image paths start from) whose images go to `image_root`."""
        images = ImageConfig(None if image_root is None else str(image_root), image_base,
                             self.max_image_bytes, self.max_image_pixels, self.image_access,
                             self.max_images_per_row, self.max_row_image_bytes)
        return ClassifyConfig(self.fields, self.domain, self.max_field_chars, images,
                              dedup_images=self.dedup_key == "text+images")

    def as_config(self, files: Sequence[InputFile]) -> dict:
        """JSON-ready record of this ingest, stored with its run."""
        return {
            "paths": [str(path) for path in files],
            "domain": self.domain,
            "field_map": self.fields.as_dict(),
            "sample_size": self.sample_size,
            "seed": self.seed,
            "max_field_chars": self.max_field_chars,
            "chunk_rows": self.chunk_rows,
            "reingest": self.reingest,
            "dedup_key": self.dedup_key,
            "max_image_bytes": self.max_image_bytes,
            "max_image_pixels": self.max_image_pixels,
            "image_roots": list(self.image_access.roots),
            "image_url_hosts": list(self.image_access.url_hosts),
            "max_images_per_row": self.max_images_per_row,
            "max_row_image_bytes": self.max_row_image_bytes,
        }


def ingest(
    con: duckdb.DuckDBPyConnection,
    paths: Sequence[str | InputFile],
    options: IngestOptions,
    progress: ProgressFn | None = None,
    parent_run_id: str | None = None,
    prefect_flow_run_id: str | None = None,
) -> IngestReport:
    """Ingest files as one recorded run (inside `parent_run_id` when a flow runs it); checks every path first."""
    inputs = resolve_inputs(paths)
    files = inputs.files
    parallel = sum(input_size(path) for path in files) >= options.parallel_min_bytes
    counters: dict = {}
    with (
        recorded_run(con, "ingest", counters, config=options.as_config(files), parent_run_id=parent_run_id,
                     prefect_flow_run_id=prefect_flow_run_id) as run_id,
        worker_pool(options.workers if parallel else 0) as workers,
    ):
        units = [[path] for path in files] if options.sample_size is None else [files]
        outcomes: list[FileOutcome] = []
        skipped = list(inputs.skipped)
        for position, unit in enumerate(units, 1):
            with transaction(con):
                outcomes.extend(_ingest_unit(con, unit, options, run_id, workers, progress, skipped))
                if position == len(units):
                    # the run closes in its last unit's transaction: a kill after this commit leaves it completed,
                    # as its data is, not 'interrupted'
                    report = IngestReport(run_id, outcomes, run_summary(con, run_id),
                                          field_hints(con, outcomes, options.fields), skipped)
                    counters.update(report.counters())
                    finish_run(con, run_id, "completed", counters)
                fault_point("ingest.before_commit")
            fault_point("ingest.after_commit")
    return report


def _ingest_unit(
    con: duckdb.DuckDBPyConnection,
    unit: list[InputFile],
    options: IngestOptions,
    run_id: str,
    workers: ParseWorkers | None,
    progress: ProgressFn | None,
    skipped: list[Skipped],
) -> list[FileOutcome]:
    """Ingest a unit's files inside the caller's transaction; its empty files join `skipped`."""
    outcomes: list[FileOutcome] = []
    image_root = database_image_root(con)
    for path in unit:
        config = options.classify_config(image_root, _folder_of(path))
        outcome = _ingest_file(con, path, config, options, run_id, workers, progress)
        if isinstance(outcome, Skipped):
            skipped.append(outcome)
        else:
            outcomes.append(outcome)
    if options.sample_size is not None:
        _draw_sample(con, run_id, options)
    return [_record_counts(con, outcome) for outcome in outcomes]


def _folder_of(path: InputFile) -> str:
    """The folder (or URL prefix) of an input, where its relative image paths start."""
    return str(path.parent) if isinstance(path, Path) else path.url.rsplit("/", 1)[0]


def _ingest_file(
    con: duckdb.DuckDBPyConnection,
    path: InputFile,
    config: ClassifyConfig,
    options: IngestOptions,
    run_id: str,
    workers: ParseWorkers | None,
    progress: ProgressFn | None,
) -> FileOutcome | Skipped:
    """Stream one file into candidates, duplicates and quarantine, unless its content is already a source;
    with --reingest, a known source's quarantined rows are streamed again (and only those). An empty file is
    skipped whatever its format: it has no rows, and recorded as a source its sha256 (every empty file's) would
    make the next empty file of any format 'already ingested'."""
    if not isinstance(path, Path):
        report_stage(f"download {path.name}", run_id, unit="bytes")
        report_progress(total=path.size)

    def downloaded(done: int) -> None:
        report_progress(done=done)
        if progress is not None:
            progress(path, "download", done, input_size(path))

    with local_copy(path, downloaded) as copy:
        if copy.n_bytes == 0:
            return Skipped(path if isinstance(path, Path) else str(path), EMPTY_FILE)
        return _ingest_copy(con, path, copy, config, options, run_id, workers, progress)


def _ingest_copy(
    con: duckdb.DuckDBPyConnection,
    path: InputFile,
    copy: LocalCopy,
    config: ClassifyConfig,
    options: IngestOptions,
    run_id: str,
    workers: ParseWorkers | None,
    progress: ProgressFn | None,
) -> FileOutcome:
    """Ingest the input `path` from its local copy; the sources row records `path` (a URL for an object)."""
    sha256 = copy.sha256
    known = first_row(con, "ingest/ingest_source_find", {"sha256": sha256})
    retry: pa.Array | None = None
    known_by = None if known is None else known[2]
    if known is not None:
        if not options.reingest:
            return FileOutcome(path, known[0], 0, already_ingested_by=known_by)
        source_id = known[0]
        retry = _take_quarantined(con, source_id, run_id)
        if not len(retry):
            return FileOutcome(path, source_id, 0, already_ingested_by=known_by, n_retried=0)
    else:
        source_id = sha256[:16]
        run_sql(con, "ingest/ingest_source_insert", {
            "source_id": source_id, "path": str(path), "sha256": sha256, "n_bytes": copy.n_bytes,
            "domain_option": options.domain, "field_map": orjson.dumps(options.fields.as_dict()).decode(),
            "run_id": run_id,
        })
    n_bytes = copy.n_bytes
    ids = {"source_id": source_id, "ingest_run_id": run_id}
    suffix = path.suffix.lower()  # the input's own suffix: a link's or an object's name says how to read it
    n_rows = n_blank_lines = 0
    # Framing runs ahead of writing, so each chunk's progress is where its batch ended.
    batch_ends: deque[int] = deque()
    report_stage(f"ingest {path.name}", run_id, unit="bytes")
    report_progress(total=n_bytes)

    def read_up_to(n_read: int) -> None:
        report_progress(done=n_read)
        if progress is not None:
            progress(path, "ingest", n_read, n_bytes)

    with open(copy.path, "rb") as handle:
        frames = FORMATS[suffix].frame(handle, options.chunk_rows, options.max_field_chars)
        batches = _noting_ends(frames, handle, batch_ends)
        max_in_flight = options.workers + 1  # one batch queued while each worker parses one
        for chunk in classified_chunks(batches, suffix, config, workers, max_in_flight):
            _write_chunk(con, chunk if retry is None else only_rows(chunk, retry), ids)
            n_rows += chunk.n_rows
            n_blank_lines += chunk.n_blank_lines
            read_up_to(batch_ends.popleft())
    read_up_to(n_bytes)
    if retry is not None:
        return FileOutcome(path, source_id, n_rows, already_ingested_by=known_by, n_retried=len(retry),
                           n_blank_lines=n_blank_lines)
    return FileOutcome(path, source_id, n_rows, n_blank_lines=n_blank_lines)


def _take_quarantined(con: duckdb.DuckDBPyConnection, source_id: str, run_id: str) -> pa.Array:
    """The source's quarantined row numbers, their rows moved to quarantine_retried to be read again (--reingest)."""
    rows = run_sql(con, "ingest/ingest_retry_take", {"source_id": source_id, "run_id": run_id}).fetchall()
    run_sql(con, "ingest/ingest_retry_clear", {"source_id": source_id})
    return pa.array(sorted(row for (row,) in rows), pa.int64())


def _noting_ends(batches: Iterator[Batch], handle: BinaryIO, ends: deque[int]) -> Iterator[Batch]:
    for batch in batches:
        ends.append(bytes_through(batch, handle))
        fault_point("ingest.after_framing")
        yield batch


def _write_chunk(con: duckdb.DuckDBPyConnection, chunk: Chunk, ids: dict) -> None:
    """Append one chunk: its new candidates first, then every other row of it as a duplicate."""
    if chunk.staged.num_rows:
        staged = _with_ids(chunk.staged, ids)
        inserted = _run_over(con, staged, "staged_chunk", "ingest/ingest_chunk_candidates")
        assert inserted is not None  # the insert returns the ids it took
        fault_point("ingest.mid_chunk")
        is_new = pc.and_(staged["is_first_in_chunk"],
                         pc.is_in(staged["candidate_id"], inserted.to_arrow_table()["candidate_id"]))
        _run_over(con, staged.append_column("is_new_candidate", is_new), "staged_chunk",
                  "ingest/ingest_chunk_duplicates")
        if staged["stored_images"].null_count < staged.num_rows:  # text-only chunks skip the query
            _run_over(con, staged, "staged_chunk", "ingest/ingest_chunk_images")
    if chunk.quarantined.num_rows:
        _run_over(con, _with_ids(chunk.quarantined, ids), "quarantine_chunk", "ingest/ingest_quarantine_append")


def _with_ids(table: pa.Table, ids: dict) -> pa.Table:
    for name, value in ids.items():
        table = table.append_column(name, pa.repeat(pa.scalar(value, pa.string()), table.num_rows))
    return table


def _run_over(
    con: duckdb.DuckDBPyConnection, table: pa.Table, view: str, statement: str
) -> duckdb.DuckDBPyRelation | None:
    """Run sql/<statement>.sql with the Arrow `table` visible under the name `view`; what it returns, if anything.

    A relation query rather than con.register: DuckDB keeps a registered Arrow table alive
    until the transaction commits, so every chunk of a file would pile up in memory.
    """
    return con.from_arrow(table).query(view, sql_text(statement))


def _draw_sample(con: duckdb.DuckDBPyConnection, run_id: str, options: IngestOptions) -> None:
    """Keep `sample_size` of this run's new candidates per domain; move the rest to sampled_out."""
    run_sql(con, "ingest/ingest_draw_create",
            {"run_id": run_id, "seed": options.seed, "sample_size": options.sample_size})
    run_sql(con, "ingest/ingest_draw_record")
    run_sql(con, "ingest/ingest_draw_remove")
    run_sql(con, "ingest/ingest_draw_drop")


def _record_counts(con: duckdb.DuckDBPyConnection, outcome: FileOutcome) -> FileOutcome:
    """Store a source's counts and refuse to commit if they do not add up to the rows read.

    The outcome comes back with the source's quarantined count (a skipped file's unchanged).
    """
    if outcome.already_ingested_by is not None and not outcome.n_retried:
        return outcome
    counts = one_row(con, "ingest/ingest_source_counts", {
        "source_id": outcome.source_id, "n_rows_read": None if outcome.n_retried else outcome.n_rows_read,
    })
    n_read, landed = counts[0], sum(counts[1:])
    if n_read != landed:
        raise RuntimeError(
            f"{outcome.path}: read {n_read} rows but {landed} landed "
            f"(inserted, duplicates, quarantined, sampled out = {counts[1:]}); nothing was committed"
        )
    return replace(outcome, n_source_rows=n_read, n_quarantined=counts[3])
