"""Streaming readers: row numbering, parse failures kept as rejections, bounded batches."""

import io
import itertools
import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from capsel.errors import CapselError
from capsel.ingest import readers
from capsel.ingest.json_array import array_elements
from capsel.ingest.oversized import Oversized
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


def test_json_array_numbers_elements_and_a_cut_off_end_is_one_row():
    rows = rows_of(b' [{"a": 1}, 2, {"a": 3}]', ".json")
    assert [(row.row, row.value) for row in rows] == [(1, {"a": 1}), (2, 2), (3, {"a": 3})]
    assert raw_text(rows[0].raw, rows[0].value) == '{"a": 1}'  # the element's own text, kept for quarantine
    broken = rows_of(b'[{"a": 1}, {"a": 2}, {"a": ', ".json")
    assert [row.row for row in broken] == [1, 2, 3]
    assert broken[2].value.reason == Reason.NOT_JSON and "ends before the array is closed" in broken[2].value.detail


def test_json_array_elements_after_a_broken_one_are_read_and_counted():
    rows = rows_of(b'[{"a": 1}, {"a": tru}, {"a": 3}, {"a": 1 2}, 5] trailing', ".json")
    assert [row.row for row in rows] == [1, 2, 3, 4, 5, 6]
    assert [row.value for row in rows if not isinstance(row.value, Rejection)] == [{"a": 1}, {"a": 3}, 5]
    assert rows[1].value.reason == Reason.NOT_JSON and raw_text(rows[1].raw, rows[1].value) == '{"a": tru}'
    assert rows[3].value.reason == Reason.NOT_JSON
    assert rows[5].value.reason == Reason.NOT_JSON and "after the array's closing" in rows[5].value.detail
    # an unbalanced bracket hides where the elements end: the rest of the file is one row, still counted
    unbalanced = rows_of(b'[{"a": 1}, {"a": [1}, {"b": 2}]', ".json")
    assert [row.value for row in unbalanced][0] == {"a": 1} and len(unbalanced) == 2
    assert unbalanced[1].value.reason == Reason.NOT_JSON


@pytest.mark.parametrize(("data", "n_rows", "n_unreadable"), [
    (b"[]", 0, 0), (b" [ ]\n", 0, 0), (b"[1,]", 2, 1), (b"[1,,2]", 3, 1), (b"[", 1, 1), (b"[1, 2", 2, 1),
    (b"[1] \n\n", 1, 0),
])
def test_json_array_edges(data, n_rows, n_unreadable):
    rows = rows_of(data, ".json")
    assert len(rows) == n_rows
    assert sum(isinstance(row.value, Rejection) for row in rows) == n_unreadable


@pytest.mark.parametrize("line", [
    b'{"instruction": "q", "output": "\\ud800"}',  # a lone surrogate
    b'{"instruction": "q", "output": "a", "instruction": "b"}',  # a repeated key
    b'{"instruction": "q", "output": "a", "n": ' + b"7" * 5000 + b"}",  # a number beyond a double
    b'{"instruction": "q\\u00e9\\ud83d\\ude00", "output": "a"}',
])
def test_a_json_array_element_is_read_exactly_as_the_same_jsonl_line(line):
    [from_lines] = rows_of(line + b"\n", ".jsonl")
    [from_array] = rows_of(b"[" + line + b"]", ".json")
    assert from_array.value == from_lines.value
    assert raw_text(from_array.raw, from_array.value) == raw_text(from_lines.raw, from_lines.value)


def random_value(rng: random.Random, depth: int = 0) -> object:
    kind = rng.randrange(6 if depth < 3 else 3)
    if kind == 0:
        return "".join(rng.choice(['"', "\\", ",", "[", "]", "{", "}", "a", " ", "é", "\n", ":"]) for _ in range(8))
    if kind == 1:
        return rng.randint(-5, 5)
    if kind == 2:
        return None
    if kind == 3:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {f"k{rng.randint(0, 99)}{index}": random_value(rng, depth + 1) for index in range(rng.randint(0, 3))}


def test_json_array_elements_survive_any_block_boundaries_and_a_cut_anywhere():
    rng = random.Random(8)
    for _ in range(1500):
        values = [random_value(rng) for _ in range(rng.randint(0, 6))]
        separators = rng.choice([(",", ":"), (", ", ": "), (" ,\n", " : ")])
        body = separators[0].join(json.dumps(v, separators=separators, ensure_ascii=rng.random() < 0.5) for v in values)
        data = f"{rng.choice(['', ' ', chr(10)])}{body}]{rng.choice(['', chr(10)])}".encode()  # after the '['
        elements = list(array_elements(io.BufferedReader(io.BytesIO(data)), read_bytes=rng.randint(1, 12)))
        assert [json.loads(element) for element in elements] == values, data
        cut = rng.randrange(0, len(data))
        rows = rows_of(b"[" + data[:cut], ".json")
        kept = [row.value for row in rows if not isinstance(row.value, Rejection)]
        assert kept == values[:len(kept)], data[:cut]  # what is read before the cut is exactly the elements
        assert len(rows) <= len(values) + 1


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
                blocks = list(readers._line_blocks(handle, batch_rows, 1 << 20, read_bytes))
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


@pytest.mark.parametrize(("suffix", "data"), [
    (".jsonl", b'{"a": 1}\n\n  \r\n{"a": 2}\n\n'),
    (".csv", b'a\n\n1\n  \r\n2\n\n'),
])
def test_blank_lines_are_no_rows_but_are_counted_the_same_in_jsonl_and_csv(suffix, data):
    batches = FORMATS[suffix].frame(io.BufferedReader(io.BytesIO(data)), 100)
    rows = [row for batch in batches for row in FORMATS[suffix].decode(batch)]
    assert sum(row.value is readers.BLANK_LINE for row in rows) == 3
    assert [row.value for row in rows if row.value is not readers.BLANK_LINE] in ([{"a": 1}, {"a": 2}],
                                                                                  [{"a": "1"}, {"a": "2"}])
    assert len(rows_of(data, suffix)) == 2  # read_rows, as examples and --map hints read files, leaves them out


def test_a_line_over_the_limit_is_an_oversized_note_in_its_place_whatever_the_reads():
    # the naive reference: split the file into lines, then classify each by its length
    rng = random.Random(1)
    for _ in range(3000):
        lines = [bytes([97 + rng.randint(0, 2)]) * rng.randint(0, 25) + b"\n" for _ in range(rng.randint(0, 8))]
        if lines and rng.random() < 0.5:
            lines[-1] = lines[-1][:-1]
        lines = [line for line in lines if line]
        limit, read_bytes, n_lines = rng.randint(1, 20), rng.randint(1, 30), rng.randint(1, 4)
        got = []
        for block in readers._line_blocks(io.BytesIO(b"".join(lines)), n_lines, limit, read_bytes):
            if isinstance(block, Oversized):
                got.append((block.n_bytes, block.prefix))
            else:
                found = list(io.BytesIO(b"".join(block[0])))
                assert len(found) == block[1]
                got += found
        assert got == [(len(line), line) if len(line) > limit else line for line in lines]


def test_an_oversized_json_element_is_a_row_of_its_own_and_the_next_reads_as_usual():
    body = b' {"a": 1}, {"b": "' + b"x" * 5000 + b'"}, {"c": 2}]'
    elements = list(array_elements(io.BytesIO(body), 64, 1000))
    assert elements[0] == b'{"a": 1}' and elements[2] == b'{"c": 2}'
    assert isinstance(elements[1], Oversized) and elements[1].prefix.startswith(b'{"b": "xx')
    assert 5000 < elements[1].n_bytes < 5020
