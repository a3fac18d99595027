"""Cut a CSV file into the raw bytes of its records, line by line, holding at most one record of bounded size.

Where a record ends follows the csv module's own rules (default dialect, strict=False): a quote opens a quoted
field only at the start of a field, `""` inside one is a quote, and outside quotes `\\n`, `\\r\\n` and a lone
`\\r` end the record. The csv module then parses each record by itself (in the parse workers), so a record
that is broken costs that record alone:

- a record over `max_record_bytes` is skipped to its end without being held (`oversized_record`);
- a quoted field the file never closes is its first line alone (`unterminated_quote`), and reading goes on
  from the next line. Finding that out takes a read to the end of the file, once: every parse that is inside
  a quoted field at the end of a later line is in the same state as that first one there, so it cannot close
  either, and from then on such a record is cut at the end of its line without reading further.

Lines are numbered as JSONL numbers them: they end at `\\n`.
"""

from __future__ import annotations

import re
from typing import BinaryIO, Generator, Iterator, NamedTuple

from capsel.ingest.reasons import Reason

_FIELD_START, _IN_FIELD, _QUOTED, _QUOTE_IN_QUOTED = range(4)
_QUOTE, _COMMA, _CR, _LF = b'"', ord(","), ord("\r"), ord("\n")
_UNQUOTED_END = re.compile(rb"[,\r\n]")
_BOM = b"\xef\xbb\xbf"


class CsvRecord(NamedTuple):
    """One record's bytes, its line end included, and the line it starts on."""

    line: int
    data: bytes


class BrokenRecord(NamedTuple):
    """A record that is not parsed: why, and what of it is kept for the quarantine (at most its first line)."""

    line: int
    raw: bytes
    reason: Reason
    detail: str


def is_blank(record: CsvRecord | BrokenRecord) -> bool:
    """A line holding nothing but whitespace: not a record, as a blank JSONL line is not one."""
    return isinstance(record, CsvRecord) and not record.data.strip()


def _record_ends(piece: bytes, state: int) -> tuple[list[int], int]:
    """Offsets just past each record end in `piece` when it is scanned from `state`, and the state after it."""
    ends: list[int] = []
    position, size = 0, len(piece)
    while position < size:
        if state == _QUOTED:
            quote = piece.find(_QUOTE, position)
            if quote < 0:
                return ends, _QUOTED
            state, position = _QUOTE_IN_QUOTED, quote + 1
            continue
        if state == _IN_FIELD:
            found = _UNQUOTED_END.search(piece, position)
            if found is None:
                return ends, _IN_FIELD
            position = found.start()
        byte = piece[position]
        if byte == _COMMA:
            state, position = _FIELD_START, position + 1
        elif byte == _CR or byte == _LF:
            position += 2 if piece[position:position + 2] == b"\r\n" else 1
            ends.append(position)
            state = _FIELD_START
        elif byte == _QUOTE[0]:
            # opens a quoted field at a field's start; after a closing quote, it is an escaped one
            state, position = _QUOTED, position + 1
        else:
            # text right after a closing quote stays in the field (strict=False), as any text after a start does
            state, position = _IN_FIELD, position + 1
    return ends, state


class CsvSplitter:
    """Records of a binary CSV handle, in order; `max_record_bytes` may change between records (after the header).

    Reading goes back in the handle only on the rare paths (a lone `\r` at a read's end, a quote found inside a
    block, an unterminated quote): a stream that cannot seek is read as long as it meets none of them.
    """

    def __init__(self, handle: BinaryIO, max_record_bytes: int, skip_bytes: int = 2**20):
        self.handle = handle
        self.max_record_bytes = max_record_bytes
        self._skip_bytes = skip_bytes
        self._line = 1  # the line the next piece starts on
        self._offset = 0  # bytes read from the handle so far
        self._recovering = False  # an unterminated quote reached the end of the file once
        self._start_record()

    def _start_record(self) -> None:
        self._state = _FIELD_START
        self._start_line = self._line
        self._held: list[bytes] = []  # the record's bytes; once it is over the limit, its first line only
        self._n_bytes = 0
        self._first_line_end: int | None = None  # offset just past the record's first line, once read

    def records(self) -> Iterator[CsvRecord | BrokenRecord]:
        """Every record, blank lines included (see `is_blank`), then whatever the end of the file leaves."""
        readline = self.handle.readline
        # a line, or a part of one at most as long as a record may be, so a line without end is not held whole
        piece = readline(self.max_record_bytes + 1)
        if piece.startswith(_BOM):
            self._offset += len(_BOM)
            piece = piece[len(_BOM):]
        while piece or self._n_bytes:
            if not self._n_bytes:
                piece = yield from self._whole_lines(piece)
            if piece:
                yield from self._scan(piece)
                if self._state == _QUOTED and not self._recovering:
                    self._skip_quoted()
            elif self._state != _QUOTED:
                if self._n_bytes:
                    yield self._finish()
                    self._start_record()
            else:
                yield self._unterminated()
                if self._first_line_end is None:  # it started on the last line: nothing comes after it
                    return
                self._rewind(self._first_line_end)
            piece = readline(self.max_record_bytes + 1)

    def _whole_lines(self, piece: bytes) -> Generator[CsvRecord, None, bytes]:
        """The common lines from `piece` on, each one whole record with nothing to scan; returns the next other piece.

        This loop is most of the time spent on a CSV file: a few checks a line, no method call.
        """
        line, offset, readline = self._line, self._offset, self.handle.readline
        while (piece.endswith(b"\n") and _QUOTE not in piece and piece.find(b"\r", 0, len(piece) - 2) < 0
               and len(piece) <= self.max_record_bytes):
            yield CsvRecord(line, piece)
            line += 1
            offset += len(piece)
            piece = readline(self.max_record_bytes + 1)
        self._line = self._start_line = line
        self._offset = offset
        return piece

    def _scan(self, piece: bytes) -> list[CsvRecord | BrokenRecord]:
        """The records that end in `piece`; what is left of it starts (or continues) the next one."""
        if piece.endswith(b"\r") and (after := self.handle.read(1)):
            # keep `\r\n` in one piece: it is one line end, not a lone `\r` and then an empty line
            if after == b"\n":
                piece += after
            else:
                self.handle.seek(-1, 1)
        found: list[CsvRecord | BrokenRecord] = []
        ends, state = _record_ends(piece, self._state)
        start = 0
        for end in ends:
            self._hold(piece, start, end)
            found.append(self._finish())
            self._start_record()
            start = end
        self._state = state
        self._hold(piece, start, len(piece))
        self._offset += len(piece)
        if piece.endswith(b"\n"):
            self._line += 1
            if not self._n_bytes:
                self._start_line = self._line
            elif self._recovering and self._state == _QUOTED:
                found.append(self._unterminated())
                self._start_record()
            elif self._first_line_end is None:
                self._first_line_end = self._offset
        return found

    def _skip_quoted(self) -> None:
        """Read on inside a quoted field, a block at a time, up to its next quote (or the end of the file)."""
        while block := self.handle.read(self._skip_bytes):
            quote = block.find(_QUOTE)
            inside = len(block) if quote < 0 else quote
            if self._first_line_end is None and (newline := block.find(b"\n", 0, inside)) >= 0:
                self._first_line_end = self._offset + newline + 1
            self._hold(block, 0, inside)
            self._offset += inside
            self._line += block.count(b"\n", 0, inside)
            if quote >= 0:
                self.handle.seek(quote - len(block), 1)  # the next piece starts at the quote
                return

    def _hold(self, data: bytes, start: int, end: int) -> None:
        """Add data[start:end] to the record; once it is over the limit, only its first line is kept (for the
        quarantine row) and the rest is only counted."""
        was_within = self._n_bytes <= self.max_record_bytes
        self._n_bytes += end - start
        if self._n_bytes <= self.max_record_bytes:
            self._held.append(data[start:end])  # the whole piece is no copy
        elif was_within:
            self._held = [_first_line([*self._held, data[start:min(end, start + self.max_record_bytes)]],
                                      self.max_record_bytes)]

    def _finish(self) -> CsvRecord | BrokenRecord:
        """The record just ended (on the current line): whole, or skipped when it grew over the limit."""
        if self._n_bytes <= self.max_record_bytes:
            return CsvRecord(self._start_line, b"".join(self._held))
        lines = f"line {self._line:,}" if self._line == self._start_line else \
            f"lines {self._start_line:,}-{self._line:,}"
        return BrokenRecord(self._start_line, self._held[0], Reason.OVERSIZED_RECORD, (
            f"a record of {self._n_bytes:,} bytes on {lines}, over the limit of {self.max_record_bytes:,} bytes "
            "(the header's fields x CAPSEL_MAX_FIELD_CHARS x 4 bytes a character), so one of its fields is over "
            "CAPSEL_MAX_FIELD_CHARS; it was skipped without being held"))

    def _unterminated(self) -> BrokenRecord:
        line = self._start_line
        return BrokenRecord(line, _first_line(self._held, self.max_record_bytes), Reason.UNTERMINATED_QUOTE, (
            f"a quoted field opens on line {line:,} and the file ends before it closes; line {line:,} alone is "
            f"quarantined, and the rows from line {line + 1:,} on are read as usual"))

    def _rewind(self, offset: int) -> None:
        """Read again from the line after the unterminated record's first, where no quoted field can close."""
        self.handle.seek(offset - self._offset, 1)
        self._line, self._offset = self._start_line + 1, offset
        self._recovering = True
        self._start_record()


def _first_line(parts: list[bytes], max_bytes: int) -> bytes:
    """The first line of the bytes `parts` hold in turn, at most `max_bytes` of it, joined without joining the rest."""
    line = []
    for part in parts:
        end = part.find(b"\n")
        line.append(part if end < 0 else part[:end + 1])
        if end >= 0:
            break
    return b"".join(line)[:max_bytes]
