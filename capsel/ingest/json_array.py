"""Cut a JSON array into the raw bytes of its top-level elements, block by block, without parsing them.

Each element is then parsed like a JSONL line, so both formats keep and refuse the same rows, and an
element that does not parse costs that element alone: the commas and brackets outside strings still say
where the next one starts. numpy finds the quotes, backslashes, brackets and commas of a block at once.
"""

from __future__ import annotations

from typing import BinaryIO, Iterator, NamedTuple

import numpy as np

from capsel.ingest.oversized import PREFIX_BYTES, Oversized

_QUOTE, _BACKSLASH, _COMMA = ord('"'), ord("\\"), ord(",")
_JSON_WHITESPACE = b" \t\r\n"
# +1 for an opening bracket, -1 for a closing one, 0 elsewhere; commas are told apart by their byte
_DEPTH_CHANGE = np.zeros(256, np.int8)
_DEPTH_CHANGE[[ord("["), ord("{")]] = 1
_DEPTH_CHANGE[[ord("]"), ord("}")]] = -1
_STRUCTURAL = _DEPTH_CHANGE != 0
_STRUCTURAL[_COMMA] = True


class Unreadable(NamedTuple):
    """Bytes that are no element: what follows the array's closing bracket, or an element the file cuts off."""

    raw: bytes
    detail: str


class ArraySplitter:
    """The element cutter's state between blocks; it starts just after the array's opening bracket."""

    def __init__(self, max_element_bytes: int | None = None) -> None:
        self.max_element_bytes = max_element_bytes
        self.skipping: Oversized | None = None  # an element over the limit: its prefix and length so far
        self.in_string = False
        self.odd_backslashes = False  # the last block ended in an odd run of backslashes: the next byte is escaped
        self.depth = 1
        self.closed = False
        self.n_cut = 0
        self.pending: list[bytes] = []

    def feed(self, data: bytes) -> list[bytes | Unreadable | Oversized]:
        """The elements that end in `data`, in order; bytes after the last one wait for the next block (an element
        growing past the limit keeps only its first bytes, and comes out as an Oversized note)."""
        elements = self._feed(data)
        if elements and self.skipping is not None:
            first = elements[0]
            size = len(first.raw) if isinstance(first, Unreadable) else len(first) if isinstance(first, bytes) else 0
            elements[0] = self.skipping._replace(n_bytes=self.skipping.n_bytes + size)
            self.skipping = None
        held = sum(map(len, self.pending))
        if self.max_element_bytes is not None and not self.closed and held > self.max_element_bytes:
            if self.skipping is None:
                start = b"".join(self.pending).lstrip(_JSON_WHITESPACE)[:PREFIX_BYTES]
                self.skipping = Oversized(start, held, self.max_element_bytes)
            else:
                self.skipping = self.skipping._replace(n_bytes=self.skipping.n_bytes + held)
            self.pending = []
        return elements

    def _feed(self, data: bytes) -> list[bytes | Unreadable | Oversized]:
        if self.closed or not data:
            self.pending.append(data)
            return []
        codes = np.frombuffer(data, np.uint8)
        quotes = self._unescaped_quotes(codes)
        structural = np.flatnonzero(_STRUCTURAL[codes])
        outside = (np.searchsorted(quotes, structural) + self.in_string) % 2 == 0
        structural = structural[outside]
        self.in_string = bool((len(quotes) + self.in_string) % 2)
        depths = self.depth + np.cumsum(_DEPTH_CHANGE[codes[structural]], dtype=np.int64)
        ends_array = depths < 1
        cuts = structural[((depths == 1) & (codes[structural] == _COMMA)) | ends_array]
        self.closed = bool(ends_array.any())
        if self.closed:
            cuts = cuts[cuts <= structural[np.argmax(ends_array)]]
        elif len(depths):
            self.depth = int(depths[-1])
        if not len(cuts):
            self.pending.append(data)
            return []
        ends = cuts.tolist()
        # the first element may have begun in an earlier block; the others lie inside this one
        self.pending.append(data[:ends[0]])
        elements: list[bytes | Unreadable | Oversized] = [b"".join(self.pending).strip(_JSON_WHITESPACE)]
        elements += [data[start + 1:end].strip(_JSON_WHITESPACE) for start, end in zip(ends, ends[1:])]
        self.pending = [data[ends[-1] + 1:]]
        n_before, self.n_cut = self.n_cut, self.n_cut + len(elements)
        if all(elements):
            return elements
        # `[]` holds no element; `[1,]` and `[1,,2]` hold an empty one, which is a row that cannot be read
        if self.closed and n_before == 0 and elements == [b""]:
            return []
        empty = Unreadable(b"", "an empty element (two commas in a row, or a comma before ']')")
        return [element or empty for element in elements]

    def finish(self) -> list[bytes | Unreadable | Oversized]:
        """What the file's end leaves: the rest after the closing bracket, or the element it cuts off."""
        rest = b"".join(self.pending).strip(_JSON_WHITESPACE)
        self.pending = []
        if self.skipping is not None:
            return [self.skipping._replace(n_bytes=self.skipping.n_bytes + len(rest))]
        if self.closed:
            return [Unreadable(rest, "content after the array's closing ']'")] if rest else []
        where = " inside a string" if self.in_string else ""
        return [Unreadable(rest, f"the file ends{where} before the array is closed")]

    def _unescaped_quotes(self, codes: np.ndarray) -> np.ndarray:
        """Positions of the quotes that open or close a string: those after an even run of backslashes."""
        quotes = np.flatnonzero(codes == _QUOTE)
        backslashes = np.flatnonzero(codes == _BACKSLASH)
        carry = int(self.odd_backslashes)
        self.odd_backslashes = bool(_run_before(backslashes, np.array([len(codes)]), carry)[0] % 2)
        if not len(backslashes):
            return quotes[1:] if carry and len(quotes) and quotes[0] == 0 else quotes
        return quotes[_run_before(backslashes, quotes, carry) % 2 == 0]


def _run_before(backslashes: np.ndarray, positions: np.ndarray, carry: int) -> np.ndarray:
    """Length of the run of backslashes right before each position; a run from the block's start adds `carry`."""
    if not len(backslashes):
        return np.where(positions == 0, carry, 0)
    index = np.arange(len(backslashes))
    starts_run = np.r_[True, np.diff(backslashes) != 1]
    run_start = backslashes[np.maximum.accumulate(np.where(starts_run, index, 0))]
    last = np.searchsorted(backslashes, positions) - 1  # the last backslash before each position
    clipped = np.maximum(last, 0)
    touching = (last >= 0) & (backslashes[clipped] == positions - 1)
    lengths = np.where(touching, positions - run_start[clipped], 0)
    from_block_start = np.where(touching, run_start[clipped] == 0, positions == 0)
    return lengths + carry * from_block_start


def array_elements(handle: BinaryIO, read_bytes: int = 8 * 2**20,
                   max_element_bytes: int | None = None) -> Iterator[bytes | Unreadable | Oversized]:
    """Each element of the array whose opening bracket `handle` has just read past, then what the end leaves."""
    splitter = ArraySplitter(max_element_bytes)
    while data := handle.read(read_bytes):
        yield from splitter.feed(data)
    yield from splitter.finish()
