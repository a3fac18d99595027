"""Classify one batch of raw rows into columnar candidate and quarantine chunks (Arrow tables).

`classify_batch` is a top-level function of picklable arguments so worker processes can run it.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterable, Iterator, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from capsel.ingest.dedup_key import candidate_id, dedup_key, with_images
from capsel.ingest.image_loading import ImageConfig, load_images
from capsel.ingest.image_refs import place_images
from capsel.ingest.readers import BLANK_LINE, FORMATS, Batch, RawRow, raw_text
from capsel.ingest.reasons import Rejection
from capsel.ingest.records import FieldMap, Fields, extract_fields

# One row's stored images in prompt order; the images table's columns.
STORED_IMAGES = pa.list_(pa.struct([
    ("sha256", pa.string()), ("format", pa.string()), ("width", pa.int32()), ("height", pa.int32()),
    ("n_bytes", pa.int64()),
]))

TEXT_SCHEMA = pa.schema([
    ("source_row", pa.int64()),
    ("domain", pa.string()),
    ("instruction", pa.string()),
    ("input", pa.string()),
    ("response", pa.string()),
    ("dedup_key", pa.string()),
    ("candidate_id", pa.string()),
    ("is_first_in_chunk", pa.bool_()),
])
STAGED_SCHEMA = TEXT_SCHEMA.append(pa.field("stored_images", STORED_IMAGES))  # null for text-only rows
QUARANTINE_SCHEMA = pa.schema([
    ("source_row", pa.int64()),
    ("domain", pa.string()),
    ("raw_text", pa.string()),
    ("reason", pa.string()),
    ("detail", pa.string()),
])


@dataclass(frozen=True)
class ClassifyConfig:
    """What decides a row's fate: field names, the --domain override, the field size limit, where images are read
    from and stored (None: rows with images are an error) and whether they are part of the dedup key."""

    fields: FieldMap
    domain_option: str | None
    max_field_chars: int
    images: ImageConfig | None = None
    dedup_images: bool = False


class Chunk(NamedTuple):
    """Classified rows of one batch: candidate rows, quarantine rows, how many rows were read and how many blank
    lines (no rows) were passed over."""

    staged: pa.Table
    quarantined: pa.Table
    n_rows: int
    n_blank_lines: int = 0


@contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """Pause the cyclic GC: parsed rows hold no cycles, and its passes over them cost ~6 µs a row."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def classify_rows(rows: Iterable[RawRow], config: ClassifyConfig) -> Chunk:
    """Sort source rows into candidate columns (with dedup key and id) and quarantine columns."""
    with _no_cyclic_gc():
        return _classify(rows, config)


def _classify(rows: Iterable[RawRow], config: ClassifyConfig) -> Chunk:
    # A tuple per row, turned into columns once at the end: cheaper than an append per column.
    staged: list[tuple] = []
    quarantined: list[tuple] = []
    add_staged, add_quarantined = staged.append, quarantined.append
    # Stored images by position in `staged`: text-only rows (most, or all) pay nothing for the column.
    stored_at: dict[int, list[dict]] = {}
    # Within-chunk first occurrences are cheap here and spare SQL a window over every chunk.
    seen: set[str] = set()
    fields, domain_option, max_chars = config.fields, config.domain_option, config.max_field_chars
    n_rows = n_blank_lines = 0
    for row in rows:
        value = row.value
        if value is BLANK_LINE:
            n_blank_lines += 1
            continue
        n_rows += 1
        if not isinstance(value, Rejection):
            value = extract_fields(value, fields, domain_option, max_chars)
        if isinstance(value, Fields):
            domain, instruction, input_text, response, images = value
            if images is None:
                key = dedup_key(instruction, input_text)
            else:
                placed = _with_images(value, config)
                if isinstance(placed, Rejection):
                    add_quarantined((row.row, domain, raw_text(row.raw, row.value), str(placed.reason), placed.detail))
                    continue
                instruction, key, stored = placed
                if stored:
                    stored_at[len(staged)] = stored
            cid = candidate_id(domain, key)
            add_staged((row.row, domain, instruction, input_text, response, key, cid, cid not in seen))
            seen.add(cid)
        else:
            add_quarantined((
                row.row, value.domain or domain_option, raw_text(row.raw, row.value), str(value.reason), value.detail,
            ))
    staged_table = _columns(staged, TEXT_SCHEMA).append_column(STAGED_SCHEMA.field("stored_images"), (
        pa.array([stored_at.get(index) for index in range(len(staged))], STORED_IMAGES) if stored_at
        else pa.nulls(len(staged), STORED_IMAGES)
    ))
    return Chunk(staged_table, _columns(quarantined, QUARANTINE_SCHEMA), n_rows, n_blank_lines)


def _with_images(fields: Fields, config: ClassifyConfig) -> tuple[str, str, list[dict] | None] | Rejection:
    """The row's instruction with its images' placeholders, its dedup key and its stored images (None: the row is
    text-only after all, its image field an empty list), or why it cannot be a candidate."""
    images = fields.images or ()
    instruction = place_images(fields.instruction, fields.input, len(images))
    if isinstance(instruction, Rejection):
        return instruction
    key = dedup_key(instruction, fields.input)
    if not images:
        return instruction, key, None
    if config.images is None:
        raise RuntimeError("rows with images were classified without an image configuration")
    stored = load_images(images, config.images)
    if isinstance(stored, Rejection):
        return stored
    if config.dedup_images:
        key = with_images(key, [image.sha256 for image in stored])
    return instruction, key, [image.__dict__ for image in stored]


def _columns(rows: list[tuple], schema: pa.Schema) -> pa.Table:
    columns = list(zip(*rows)) if rows else [()] * len(schema)
    return pa.Table.from_arrays([pa.array(column, type=f.type) for column, f in zip(columns, schema)], schema=schema)


def classify_batch(suffix: str, batch: Batch, config: ClassifyConfig) -> Chunk:
    """Decode one framed batch of a `suffix` file and classify its rows (runs in worker processes)."""
    return classify_rows(FORMATS[suffix].decode(batch), config)


def only_rows(chunk: Chunk, rows: pa.Array) -> Chunk:
    """The chunk cut down to the given source rows (a --reingest retry), first-in-chunk marks recomputed.

    The marks must only count kept rows: a row left out already has its outcome, and under the new
    options it may share a key no candidate has, which would make a kept row a duplicate of nothing.
    """
    staged = chunk.staged.filter(pc.is_in(chunk.staged["source_row"], value_set=rows))
    ids = staged["candidate_id"].to_pylist()
    first = [index == position for index, position in enumerate(_first_positions(ids))]
    staged = staged.set_column(staged.schema.get_field_index("is_first_in_chunk"), "is_first_in_chunk",
                               pa.array(first, pa.bool_()))
    quarantined = chunk.quarantined.filter(pc.is_in(chunk.quarantined["source_row"], value_set=rows))
    return chunk._replace(staged=staged, quarantined=quarantined)


def _first_positions(ids: list[str]) -> list[int]:
    """For each id, the position where it first occurs in `ids`."""
    first: dict[str, int] = {}
    return [first.setdefault(cid, index) for index, cid in enumerate(ids)]
