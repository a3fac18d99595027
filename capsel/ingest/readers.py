"""Streaming readers, split in two stages so parsing can run in worker processes.

A framer cuts a binary file handle into batches of at most `batch_rows` raw items (lines,
CSV records, JSON elements, a Parquet record batch) without holding more than one batch;
a decoder turns one batch into (row number, raw, parsed record or Rejection) rows. Row
numbers are 1-based: the line for JSONL, the data record after the header for CSV, the
element for a JSON array and the row for Parquet. A blank line (JSONL, CSV) is no row: its
decoder yields it as BLANK_LINE, so it is counted apart instead of vanishing.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass
from itertools import chain, islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Callable, Iterator, NamedTuple

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from capsel.errors import CapselError
from capsel.ingest.csv_records import BrokenRecord, CsvRecord, CsvSplitter, is_blank
from capsel.ingest.json_array import Unreadable, array_elements
from capsel.ingest.json_text import parse_json_text
from capsel.ingest.oversized import PREFIX_BYTES, Oversized, max_row_bytes
from capsel.ingest.reasons import Reason, Rejection

if TYPE_CHECKING:
    from capsel.object_storage.remote_files import RemoteFile

_BOM = b"\xef\xbb\xbf"
_JSON_WHITESPACE = b" \t\r\n"
_NEWLINE = ord("\n")
# CAPSEL_MAX_FIELD_CHARS's default, for the readers used outside an ingest (examples, --map hints)
DEFAULT_MAX_FIELD_CHARS = 1_000_000


class _BlankLine:
    """The value of a blank line's row: no record, and no reason to quarantine it."""

    def __repr__(self) -> str:
        return "BLANK_LINE"


BLANK_LINE = _BlankLine()


class RawRow(NamedTuple):
    """One source row: its number, its raw form (for quarantine), and the record, a Rejection or BLANK_LINE.

    `raw` is the line's, element's or record's bytes (JSONL, JSON array, CSV), or None where the
    parsed record is the most faithful form left (Parquet rows).
    """

    row: int
    raw: bytes | None
    value: object


class Batch(NamedTuple):
    """Raw items of consecutive rows, the first numbered `first_row`; `header` is CSV's."""

    first_row: int
    items: Any
    header: list[str] | None = None


def _batches(
    items: Iterator[Any], batch_rows: int, header: list[str] | None = None, n_rows: Callable[[list], int] = len,
) -> Iterator[Batch]:
    """Batches of `batch_rows` items; the next batch's first row is `n_rows` of the items after this one's."""
    first_row = 1
    while chunk := list(islice(items, batch_rows)):
        yield Batch(first_row, chunk, header)
        first_row += n_rows(chunk)


class FileRange(NamedTuple):
    """Bytes [start, end) of a file on disk: whole lines a worker process reads for itself."""

    path: str
    start: int
    end: int

    def read(self) -> bytes:
        """The range's bytes; CapselError if the file no longer holds them all."""
        with open(self.path, "rb") as handle:
            handle.seek(self.start)
            data = handle.read(self.end - self.start)
        if len(data) != self.end - self.start:
            raise CapselError(f"{self.path}: the file shrank while it was being ingested; nothing was committed")
        return data


def frame_jsonl(handle: BinaryIO, batch_rows: int, max_field_chars: int = DEFAULT_MAX_FIELD_CHARS) -> Iterator[Batch]:
    """Batches of `batch_rows` whole lines (blank lines included, so numbering matches the file).

    A batch is a FileRange when the handle is a file on disk, so parse workers read their lines
    themselves instead of receiving them through a pipe; otherwise it is the lines' bytes. A line over
    max_row_bytes(max_field_chars) is a batch of its own holding only an Oversized note: it is read past,
    never held.
    """
    path = _disk_path(handle)
    first_row, start = 1, handle.tell() if path else 0
    for block in _line_blocks(handle, batch_rows, max_row_bytes(max_field_chars)):
        if isinstance(block, Oversized):
            yield Batch(first_row, block)
            first_row, start = first_row + 1, start + block.n_bytes
            continue
        pieces, n_lines = block
        end = start + sum(map(len, pieces))
        yield Batch(first_row, FileRange(path, start, end) if path else b"".join(pieces))
        first_row, start = first_row + n_lines, end


def bytes_through(batch: Batch, handle: BinaryIO) -> int:
    """How far into the file `batch` reaches, taken when the framer yields it."""
    return batch.items.end if isinstance(batch.items, FileRange) else handle.tell()


def _disk_path(handle: BinaryIO) -> str | None:
    name = getattr(handle, "name", None)
    # Absolute, so a worker (or a later chdir) reads the same file.
    return os.path.abspath(name) if isinstance(name, str) and os.path.isfile(name) else None


def _line_blocks(
    handle: BinaryIO, n_lines: int, max_line_bytes: int, read_bytes: int = 8 * 2**20
) -> Iterator[tuple[list[bytes], int] | Oversized]:
    """(byte pieces, line count) of consecutive blocks of `n_lines` lines (the last may hold fewer), and in its
    place an Oversized note for each line that grows past `max_line_bytes`, whose bytes are dropped as they come.

    Lines end at a newline byte only, as when iterating a binary file, and a last line without one counts. A line
    is checked at the end of each read and where it ends, so none held is longer than `max_line_bytes` plus one
    read, and none longer than `max_line_bytes` is parsed.
    """
    read_bytes = max(1, min(read_bytes, max_line_bytes))
    pending: list[bytes] = []  # whole lines, then the start of the line still open
    pending_lines = open_bytes = 0
    skipping: Oversized | None = None  # the oversized line being read past: its prefix and length so far
    while data := handle.read(read_bytes):
        # numpy finds the newlines several times faster than bytes.count and a loop of find.
        ends = np.flatnonzero(np.frombuffer(data, np.uint8) == _NEWLINE) + 1
        offset, used = 0, 0
        if skipping is not None:
            offset, used = (int(ends[0]), 1) if len(ends) else (len(data), 0)
            skipping = skipping._replace(prefix=(skipping.prefix + data[:offset])[:PREFIX_BYTES],
                                         n_bytes=skipping.n_bytes + offset)
            if not len(ends):
                continue
            yield skipping
            skipping = None
        elif len(ends) and open_bytes + int(ends[0]) > max_line_bytes:  # the open line ends here, too long
            held = b"".join(pending)
            if pending_lines:
                yield [held[:len(held) - open_bytes]], pending_lines
            offset, used = int(ends[0]), 1
            yield Oversized((held[len(held) - open_bytes:] + data[:offset])[:PREFIX_BYTES], open_bytes + offset,
                            max_line_bytes)
            pending, pending_lines, open_bytes = [], 0, 0
        while pending_lines + len(ends) - used >= n_lines:
            used += n_lines - pending_lines
            cut = int(ends[used - 1])
            pending.append(data[offset:cut])
            yield pending, n_lines
            pending, pending_lines, offset, open_bytes = [], 0, cut, 0
        if offset < len(data):
            pending.append(data[offset:])
            pending_lines += len(ends) - used
            open_bytes = len(data) - int(ends[-1]) if len(ends) > used else open_bytes + len(data) - offset
        if open_bytes > max_line_bytes:
            held = b"".join(pending)
            if pending_lines:
                yield [held[:len(held) - open_bytes]], pending_lines
            skipping = Oversized(held[len(held) - open_bytes:][:PREFIX_BYTES], open_bytes, max_line_bytes)
            pending, pending_lines, open_bytes = [], 0, 0
    if skipping is not None:
        yield skipping
    elif pending:
        yield pending, pending_lines + (not pending[-1].endswith(b"\n"))


def _jsonl_lines(items: bytes | FileRange) -> io.BytesIO:
    return io.BytesIO(items.read() if isinstance(items, FileRange) else items)


def decode_jsonl(batch: Batch) -> Iterator[RawRow]:
    """Parse lines; a blank line is not a record: its value is BLANK_LINE; an oversized one is its rejection."""
    if isinstance(batch.items, Oversized):
        yield RawRow(batch.first_row, batch.items.prefix, batch.items.rejection())
        return
    for number, line in enumerate(_jsonl_lines(batch.items), batch.first_row):
        if number == 1 and line.startswith(_BOM):
            line = line[len(_BOM):]
        value = parse_json_text(line)
        if isinstance(value, Rejection) and not line.strip():
            value = BLANK_LINE
        yield RawRow(number, line, value)


def frame_json(handle: BinaryIO, batch_rows: int, max_field_chars: int = DEFAULT_MAX_FIELD_CHARS) -> Iterator[Batch]:
    """Batches of a JSON array's elements, as raw bytes; a .json file not starting with '[' is JSONL.

    An element that is not valid JSON is one not_json row and the next element is read as usual. Where
    the file ends before the array closes, the cut-off element is one not_json row; anything but whitespace
    after the closing ']' is one more.
    """
    head = handle.peek(64 * 1024)  # type: ignore[attr-defined]  # open(path, "rb") is a BufferedReader
    start = head.removeprefix(_BOM).lstrip(_JSON_WHITESPACE)
    if not start.startswith(b"["):
        yield from frame_jsonl(handle, batch_rows, max_field_chars)
        return
    handle.read(len(head) - len(start) + 1)  # through the opening bracket
    limit = max_row_bytes(max_field_chars)
    yield from _batches(array_elements(handle, min(8 * 2**20, limit), limit), batch_rows)


def decode_elements(batch: Batch) -> Iterator[RawRow]:
    """Parse a JSON array's elements as JSONL parses lines."""
    for number, element in enumerate(batch.items, batch.first_row):
        if isinstance(element, Unreadable):
            yield RawRow(number, element.raw, Rejection(Reason.NOT_JSON, element.detail))
        elif isinstance(element, Oversized):
            yield RawRow(number, element.prefix, element.rejection())
        else:
            yield RawRow(number, element, parse_json_text(element))


def frame_parquet(
    handle: BinaryIO, batch_rows: int, max_field_chars: int = DEFAULT_MAX_FIELD_CHARS,
) -> Iterator[Batch]:
    """One Arrow record batch per Batch, read from the file one batch at a time.

    Parquet has no rows to quarantine when its structure breaks: a truncated or corrupt file is a
    CapselError (the file's transaction rolls back).
    """
    first_row = 1
    try:
        for record_batch in pq.ParquetFile(handle).iter_batches(batch_size=batch_rows):
            yield Batch(first_row, record_batch)
            first_row += record_batch.num_rows
    except (pa.ArrowException, OSError) as exc:
        name = getattr(handle, "name", "the file")
        raise CapselError(f"{name}: not a readable Parquet file from row {first_row} on ({exc}); "
                          "nothing of it was committed") from exc


def decode_parquet(batch: Batch) -> Iterator[RawRow]:
    """Rows of one record batch as dicts."""
    for number, record in enumerate(batch.items.to_pylist(), batch.first_row):
        yield RawRow(number, None, record)


def frame_csv(handle: BinaryIO, batch_rows: int, max_field_chars: int = DEFAULT_MAX_FIELD_CHARS) -> Iterator[Batch]:
    """Batches of raw CSV records (capsel.ingest.csv_records) after the header, none larger than a record whose
    fields all stay within `max_field_chars` can be.

    A header that cannot be read, or that names a column twice, is a CapselError: it decides every row of the
    file, so the file is refused whole (the JSON equivalent, an object repeating a key, costs that row alone).
    """
    name = getattr(handle, "name", "the file")
    splitter = CsvSplitter(handle, _max_record_bytes(1, max_field_chars))
    records = splitter.records()
    blank_lines = []
    for record in records:
        if is_blank(record):  # blank lines before the header are counted like any other
            blank_lines.append(record)
            continue
        header = _csv_header(record, name)
        splitter.max_record_bytes = _max_record_bytes(len(header), max_field_chars)
        break
    else:
        header = []
    if header or blank_lines:
        yield from _batches(chain(blank_lines, records), batch_rows, header, _n_csv_rows)


def _max_record_bytes(n_fields: int, max_field_chars: int) -> int:
    # a longer record holds a field over max_field_chars however its bytes are spread: a character is at
    # most 4 bytes (a doubled quote 2), plus a field's 2 quotes and comma, plus the line end
    return n_fields * (4 * max_field_chars + 3) + 2


def _n_csv_rows(records: list[CsvRecord | BrokenRecord]) -> int:
    return sum(not is_blank(record) for record in records)


def _csv_header(record: CsvRecord | BrokenRecord, name: str) -> list[str]:
    """The header's column names; a CapselError when it cannot be read or repeats a name."""
    if isinstance(record, BrokenRecord):
        problem = "opens a quoted field that the file never closes" if record.reason == Reason.UNTERMINATED_QUOTE \
            else "is longer than any header can be"
        raise CapselError(f"{name}: the CSV header on line {record.line:,} {problem}; nothing of the file was read")
    text = record.data.removeprefix(_BOM).decode("utf-8", errors="replace")
    [header] = _parse_records([text])
    if isinstance(header, Rejection):
        raise CapselError(f"{name}: cannot read the CSV header on line {record.line:,} ({header.detail})")
    first_at: dict[str, int] = {}
    for position, column in enumerate(header, 1):
        if column in first_at:
            raise CapselError(
                f"{name}: the CSV header names column {column!r} twice (columns {first_at[column]} and {position}); "
                "which one holds a row's value cannot be known, so nothing of the file was read: rename or drop one"
            )
        first_at[column] = position
    return header


def decode_csv(batch: Batch) -> Iterator[RawRow]:
    """Records as {header: value} dicts; every value is a string ('' for an empty cell)."""
    header = batch.header or []
    texts: list[str] = []
    rows: list[tuple[int, bytes, object]] = []  # the value is None where the parsed text goes
    number = batch.first_row
    for record in batch.items:
        if isinstance(record, BrokenRecord):
            rows.append((number, record.raw, Rejection(record.reason, record.detail)))
        elif is_blank(record):
            rows.append((0, record.data, BLANK_LINE))
            continue
        else:
            try:
                texts.append(record.data.decode("utf-8"))
                rows.append((number, record.data, None))
            except UnicodeDecodeError:
                rows.append((number, record.data, Rejection(Reason.INVALID_UTF8,
                                                            "the record holds bytes that are not UTF-8")))
        number += 1
    parsed = iter(_parse_records(texts))
    for number, raw, value in rows:
        if value is None:
            value = _csv_value(next(parsed), header)
        yield RawRow(number, raw, value)


def _parse_records(texts: list[str]) -> list[list[str] | Rejection]:
    """Each text's fields, parsed by one csv reader (three times cheaper than a reader a record)."""
    # Pool rows can be far longer than csv's 128 KiB default: the splitter bounds records, oversized_field fields.
    csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))
    reader = csv.reader(texts)
    parsed: list[list[str] | Rejection] = []
    for _ in texts:
        try:
            parsed.append(next(reader))
        except csv.Error as exc:
            parsed.append(Rejection(Reason.BAD_CSV_ROW, str(exc)))
        if reader.line_num != len(parsed):  # each text is one whole record, or the rows would shift
            raise RuntimeError(f"CSV record {len(parsed)} of a batch was framed as part of a record")
    return parsed


def _csv_value(fields: list[str] | Rejection, header: list[str]) -> dict | Rejection:
    if isinstance(fields, Rejection):
        return fields
    if len(fields) != len(header):
        return Rejection(Reason.BAD_CSV_ROW, f"{len(fields)} fields, header has {len(header)}")
    return dict(zip(header, fields))


def raw_text(raw: bytes | None, value: object) -> str | None:
    """The row as text for the quarantine table; undecodable bytes become U+FFFD, never lost."""
    if isinstance(raw, bytes):
        return raw.decode("utf-8", errors="replace").rstrip("\r\n")
    if isinstance(value, Rejection):
        return None
    return orjson.dumps(value, default=_shown_in_json).decode()


def _shown_in_json(value: object) -> str:
    """A Parquet value JSON has no form for: binary (an image, say) as its size, not kilobytes of escapes."""
    if isinstance(value, bytes):
        return f"<{len(value):,} bytes>"
    return str(value)


def decode_any(batch: Batch) -> Iterator[RawRow]:
    """Decode a .json batch: raw lines when the file was JSON Lines, array elements otherwise."""
    if isinstance(batch.items, (bytes, FileRange, Oversized)):
        return decode_jsonl(batch)
    return decode_elements(batch)


@dataclass(frozen=True)
class SourceFormat:
    """How one file format is framed (in the reading process) and decoded (in any process)."""

    name: str
    # (handle, batch_rows, max_field_chars): only CSV's framer holds a record before it is parsed, and bounds it
    frame: Callable[[BinaryIO, int, int], Iterator[Batch]]
    decode: Callable[[Batch], Iterator[RawRow]]


JSONL = SourceFormat("jsonl", frame_jsonl, decode_jsonl)
FORMATS: dict[str, SourceFormat] = {
    ".jsonl": JSONL,
    ".ndjson": JSONL,
    ".json": SourceFormat("json", frame_json, decode_any),
    ".parquet": SourceFormat("parquet", frame_parquet, decode_parquet),
    ".csv": SourceFormat("csv", frame_csv, decode_csv),
}


def format_for(path: Path | RemoteFile) -> SourceFormat:
    """The format of a file, chosen by its suffix."""
    found = FORMATS.get(path.suffix.lower())
    if found is None:
        raise CapselError(f"{path}: unsupported format {path.suffix!r}; use one of {', '.join(FORMATS)}")
    return found


def read_rows(
    handle: BinaryIO, source_format: SourceFormat, batch_rows: int = 10_000,
    max_field_chars: int = DEFAULT_MAX_FIELD_CHARS,
) -> Iterator[RawRow]:
    """Every row of a file in order, one batch in memory at a time (the in-process path); blank lines left out."""
    for batch in source_format.frame(handle, batch_rows, max_field_chars):
        for row in source_format.decode(batch):
            if row.value is not BLANK_LINE:
                yield row
