"""Streaming readers: row numbering, parse failures kept as rejections, bounded batches."""

import io
import itertools
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from capsel.errors import CapselError
from capsel.ingest import readers
from capsel.ingest.readers import FORMATS, raw_text, read_rows
from capsel.ingest.reasons import Reason, Rejection


def rows_of(data: bytes, suffix: str, batch_rows: int = 2):
    return list(read_rows(io.BufferedReader(io.BytesIO(data)), FORMATS[suffix], batch_rows))


def test_jsonl_numbers_lines_and_keeps_bad_ones():
    data = b'\xef\xbb\xbf{"a": 1}\n\nnot json\n{"a": "caf\xe9"}\r\n[1]\n{"a": 2}'
    rows = rows_of(data, ".jsonl")
    assert [row.row for row in rows] == [1, 3, 4, 5, 6]  # the blank line 2 is not a record
    assert rows[0].value == {"a": 1}
    assert rows[1].value.reason == Reason.NOT_JSON
    assert rows[2].value.reason == Reason.INVALID_UTF8
    assert raw_text(rows[2].raw, rows[2].value) == '{"a": "caf\ufffd"}'
    assert rows[3].value == [1]
    assert rows[4].value == {"a": 2}


def test_json_array_numbers_elements_and_stops_with_one_row_at_a_break():
    rows = rows_of(b' [{"a": 1}, 2, {"a": 3}]', ".json")
    assert [(row.row, row.value) for row in rows] == [(1, {"a": 1}), (2, 2), (3, {"a": 3})]
    broken = rows_of(b'[{"a": 1}, {"a": 2}, {"a": ', ".json")
    assert [row.row for row in broken] == [1, 2, 3]
    assert broken[2].value.reason == Reason.NOT_JSON


def test_json_file_holding_json_lines_is_read_as_lines():
    rows = rows_of(b'{"a": 1}\n{"a": 2}\n', ".json")
    assert [(row.row, row.value) for row in rows] == [(1, {"a": 1}), (2, {"a": 2})]


def test_csv_counts_data_records_not_lines():
    data = (
        b'instruction,output\n'
        b'"multi\nline",x\n'
        b'plain,y\n'
        b'too,many,fields\n'
        b'caf\xe9,z\n'
    )
    rows = rows_of(data, ".csv")
    assert [row.row for row in rows] == [1, 2, 3, 4]
    assert rows[0].value == {"instruction": "multi\nline", "output": "x"}
    assert rows[2].value.reason == Reason.BAD_CSV_ROW
    assert rows[3].value.reason == Reason.INVALID_UTF8
    assert raw_text(rows[3].raw, rows[3].value) == "caf\ufffd,z"


def test_parquet_numbers_rows_across_batches(tmp_path):
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"instruction": [f"q{i}" for i in range(7)], "n": list(range(7))}), path, row_group_size=3)
    with open(path, "rb") as handle:
        batches = list(FORMATS[".parquet"].frame(handle, 2))
        rows = list(itertools.chain.from_iterable(FORMATS[".parquet"].decode(b) for b in batches))
    assert max(batch.items.num_rows for batch in batches) <= 2
    assert [(row.row, row.value["n"]) for row in rows] == [(i + 1, i) for i in range(7)]
    assert raw_text(rows[0].raw, rows[0].value) == '{"instruction":"q0","n":0}'


class EndlessStream(io.RawIOBase):
    """A file that never ends: reading it whole would never return."""

    def __init__(self, head: bytes, item: bytes):
        self.pending = head
        self.item = item

    def readable(self):
        return True

    def readinto(self, buffer):
        size = len(buffer)
        if len(self.pending) < size:
            self.pending += self.item * (size // len(self.item) + 1)
        buffer[:size], self.pending = self.pending[:size], self.pending[size:]
        return size


def test_framers_stream_without_reading_the_whole_file():
    cases = {
        ".jsonl": EndlessStream(b"", b'{"instruction": "q", "output": "a"}\n'),
        ".csv": EndlessStream(b"instruction,output\n", b"q,a\n"),
        ".json": EndlessStream(b"[", b'{"instruction": "q", "output": "a"},'),
    }
    for suffix, stream in cases.items():
        handle = io.BufferedReader(stream)
        first = next(FORMATS[suffix].frame(handle, 1000))
        assert first.first_row == 1
        assert [row.row for row in FORMATS[suffix].decode(first)] == list(range(1, 1001)), suffix


def test_rejection_rows_have_no_raw_text_when_nothing_was_read():
    assert raw_text(None, Rejection(Reason.NOT_JSON, "broken")) is None


def test_jsonl_batches_hold_the_same_lines_as_iterating_the_file(tmp_path):
    rng = random.Random(7)
    pieces = [b"", b"\n", b"\r\n", b"x", b"\xef\xbb\xbf", b'{"a": 1}', b"\xff"]
    for case in range(300):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
        expected = list(io.BytesIO(data))
        batch_rows = rng.randint(1, 6)
        read_bytes = rng.randint(1, 16)
        path = tmp_path / f"{case}.jsonl"
        path.write_bytes(data)
        for handle in (open(path, "rb"), io.BufferedReader(io.BytesIO(data))):
            with handle:
                blocks = list(readers._line_blocks(handle, batch_rows, read_bytes))
            lines = list(itertools.chain.from_iterable(io.BytesIO(b"".join(block)) for block, _ in blocks))
            assert lines == expected
            assert [n for _, n in blocks] == [len(list(io.BytesIO(b"".join(block)))) for block, _ in blocks]
            assert all(n == batch_rows for _, n in blocks[:-1])
        with open(path, "rb") as handle:
            batches = list(FORMATS[".jsonl"].frame(handle, batch_rows))
        assert all(isinstance(batch.items, readers.FileRange) for batch in batches)
        assert b"".join(batch.items.read() for batch in batches) == data
        assert [batch.first_row for batch in batches] == [1 + batch_rows * i for i in range(len(batches))]


def test_a_line_range_of_a_file_that_shrank_is_an_error(tmp_path):
    path = tmp_path / "pool.jsonl"
    path.write_bytes(b'{"a": 1}\n' * 10)
    with open(path, "rb") as handle:
        [batch] = FORMATS[".jsonl"].frame(handle, 100)
    path.write_bytes(b'{"a": 1}\n')
    with pytest.raises(CapselError, match="shrank"):
        list(FORMATS[".jsonl"].decode(batch))
