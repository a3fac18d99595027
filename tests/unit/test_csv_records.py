"""The CSV reader against Python's csv module: the same records on well-formed input, and after an unterminated
quote exactly the records csv reads of the lines after it; bounded memory on a quoted field that never closes."""

import csv
import io
import random
import tracemalloc

import pytest

from capsel.errors import CapselError
from capsel.ingest.csv_records import BrokenRecord, CsvRecord, CsvSplitter
from capsel.ingest.readers import BLANK_LINE, FORMATS, read_rows
from capsel.ingest.reasons import Reason, Rejection

# what breaks a naive splitter: quotes, doubled quotes, commas, every line end, text after a closing quote
PIECES = ['"', ",", "\n", "\r", "\r\n", '""', "a", " ", "é"]


def split(data: bytes, limit: int = 10**6, skip_bytes: int = 8 * 2**20) -> list[CsvRecord | BrokenRecord]:
    return list(CsvSplitter(io.BufferedReader(io.BytesIO(data)), limit, skip_bytes).records())


def csv_module(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def fields_of(record: CsvRecord) -> list[str]:
    [fields] = csv.reader([record.data.decode()])
    return fields


def test_records_are_those_the_csv_module_reads_wherever_reads_and_blocks_end():
    rng = random.Random(3)
    n_compared = 0
    for _ in range(3000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 30)))
        records = split(text.encode(), skip_bytes=rng.randint(1, 8))
        if any(isinstance(record, BrokenRecord) for record in records):
            continue  # a quote the text never closes: csv reads the rest as one field (the tests below)
        assert [fields_of(record) for record in records] == csv_module(text), text
        n_compared += 1
    assert n_compared > 1500


def test_nothing_is_lost_or_read_twice_and_each_unterminated_quote_really_runs_to_the_end():
    rng = random.Random(4)
    lines = ['a,b', '"a",b', '"a\nb",c', '"x', 'q"r,"s', '', ' ', '"y""', 'a\rb', '"', '"z\r"']
    for _ in range(3000):
        data = "".join(rng.choice(lines) + rng.choice(["\n", "\r\n", ""]) for _ in range(rng.randint(1, 8))).encode()
        records = split(data, skip_bytes=rng.randint(1, 8))
        kept = [record.data if isinstance(record, CsvRecord) else record.raw for record in records]
        assert b"".join(kept) == data, data  # a broken record keeps its first line, and reading goes on after it
        start = 0
        for record, raw in zip(records, kept):
            if isinstance(record, BrokenRecord):
                assert record.reason == Reason.UNTERMINATED_QUOTE
                # csv reads the text from its line as one field up to a quote added after the end of the file
                rest = csv_module((data[start:] + b'"\nSENTINEL\n').decode())
                assert len(rest) == 2 and rest[1] == ["SENTINEL"], (data, record)
            start += len(raw)


def reference_rows(lines: list[str]) -> list[list[str] | int]:
    """What a record-by-record csv read should give: a record's fields, or the line number of an unterminated
    quote, whose line alone is left out before reading on (the csv module, with a quote added at the end to see
    which records run into it). Lines end at `\n` only here."""
    rows: list[list[str] | int] = []
    index = 0
    while index < len(lines):
        reader = csv.reader(io.StringIO("".join(lines[index:]) + '"\nSENTINEL\n', newline=""))
        fields = next(reader)
        if reader.line_num > len(lines) - index:
            rows.append(index + 1)
            index += 1
            continue
        if "".join(lines[index:index + reader.line_num]).strip():  # a line of whitespace is no row
            rows.append(fields)
        index += reader.line_num
    return rows


def random_field(rng: random.Random) -> str:
    return "".join(rng.choice(['a', 'b', ' ', ',', '"', '\n', 'é']) for _ in range(rng.randint(0, 6)))


def test_after_unterminated_quotes_the_reader_gives_the_records_csv_reads_of_the_lines_after_them():
    rng = random.Random(5)
    n_broken = 0
    for _ in range(1500):
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        for _ in range(rng.randint(0, 8)):
            writer.writerow([random_field(rng) for _ in range(2)])
        lines = out.getvalue().splitlines(keepends=True)
        for _ in range(rng.randint(1, 3)):  # stray quotes opening a field, and blank lines
            lines.insert(rng.randint(0, len(lines)), rng.choice(['"oops,x\n', 'q,"open\n', '\n']))
        data = ("instruction,output\n" + "".join(lines)).encode()
        got = []
        for row in read_rows(io.BufferedReader(io.BytesIO(data)), FORMATS[".csv"], batch_rows=rng.randint(1, 4)):
            if isinstance(row.value, Rejection):
                assert row.value.reason in (Reason.UNTERMINATED_QUOTE, Reason.BAD_CSV_ROW), row
                if row.value.reason == Reason.UNTERMINATED_QUOTE:
                    got.append(int(row.value.detail.split("line ")[1].split()[0]) - 1)  # the line after the header
                    continue
                got.append(None)
            else:
                got.append(list(row.value.values()))
        expected = [row if isinstance(row, int) or len(row) == 2 else None for row in reference_rows(lines)]
        assert got == expected, data
        n_broken += sum(isinstance(row, int) for row in expected)
    assert n_broken > 200


def test_rows_are_numbered_by_record_and_blank_lines_are_no_rows():
    data = b'instruction,output\n\nq1,a\n"q2\nover two lines",a\n  \n"never closed,a\nq3,a\n\r\n'
    rows = list(FORMATS[".csv"].decode(batch) for batch in FORMATS[".csv"].frame(
        io.BufferedReader(io.BytesIO(data)), 100))
    flat = [row for batch in rows for row in batch]
    assert sum(row.value is BLANK_LINE for row in flat) == 3
    numbered = [(row.row, row.value) for row in flat if row.value is not BLANK_LINE]
    assert numbered[0] == (1, {"instruction": "q1", "output": "a"})
    assert numbered[1] == (2, {"instruction": "q2\nover two lines", "output": "a"})
    assert numbered[2][0] == 3 and numbered[2][1].reason == Reason.UNTERMINATED_QUOTE
    assert "opens on line 7" in numbered[2][1].detail and "from line 8 on" in numbered[2][1].detail
    assert numbered[3] == (4, {"instruction": "q3", "output": "a"})


def test_a_record_over_the_limit_is_skipped_to_its_end_and_the_next_is_read():
    data = b'instruction,output\n"' + b"x" * 5000 + b'\nstill inside",a\nq,a\n'
    [rows] = [list(FORMATS[".csv"].decode(batch)) for batch in FORMATS[".csv"].frame(
        io.BufferedReader(io.BytesIO(data)), 100, max_field_chars=100)]
    assert rows[0].value.reason == Reason.OVERSIZED_RECORD
    assert "5,018 bytes on lines 2-3, over the limit of 808 bytes" in rows[0].value.detail
    assert len(rows[0].raw) <= 808
    assert rows[1].row == 2 and rows[1].value == {"instruction": "q", "output": "a"}


def test_a_field_longer_than_the_csv_modules_default_limit_is_read_whole():
    long = "x" * 200_000
    before = csv.field_size_limit(131_072)  # the module's default, as in a fresh parse worker
    try:
        [row] = read_rows(io.BufferedReader(io.BytesIO(f'instruction,output\n"{long}",a\n'.encode())),
                          FORMATS[".csv"])
    finally:
        csv.field_size_limit(max(before, csv.field_size_limit()))
    assert row.value == {"instruction": long, "output": "a"}


@pytest.mark.parametrize(("header", "message"), [
    (b"instruction,output,instruction\n", "names column 'instruction' twice (columns 1 and 3)"),
    (b'"instruction,output\nq,a\n', "header on line 1 opens a quoted field that the file never closes"),
])
def test_a_header_that_decides_no_column_is_refused_whole(header, message):
    with pytest.raises(CapselError, match=message.replace("(", r"\(").replace(")", r"\)")):
        list(read_rows(io.BufferedReader(io.BytesIO(header + b"q,a,b\n")), FORMATS[".csv"]))


class QuotedForever(io.RawIOBase):
    """`size` bytes of a CSV whose second line opens a quoted field that never closes: lines of records."""

    def __init__(self, size: int):
        self.head, self.size, self.done = b'instruction,output\n"oops,a\n', size, 0
        self.line = b"a question that runs on,an answer\n"
        self.lines = self.line * (2**20 // len(self.line) + 2)  # made before memory is traced

    def readable(self):
        return True

    def seekable(self):
        return True

    def seek(self, offset, whence=0):
        self.done = offset if whence == 0 else self.done + offset
        return self.done

    def tell(self):
        return self.done

    def readinto(self, buffer):
        need = min(len(buffer), self.size - self.done, 2**20)
        if need <= 0:
            return 0
        if self.done < len(self.head):
            chunk = self.head[self.done:self.done + need]
        else:
            start = (self.done - len(self.head)) % len(self.line)
            chunk = self.lines[start:start + need]
        buffer[:len(chunk)] = chunk
        self.done += len(chunk)
        return len(chunk)


def test_a_quoted_field_that_never_closes_is_not_held_and_the_records_after_it_are_read():
    stream = QuotedForever(8 * 2**20)
    records = CsvSplitter(io.BufferedReader(stream), max_record_bytes=10_000, skip_bytes=2**18).records()
    header = next(records)
    tracemalloc.start()
    try:
        broken = next(records)  # read to the end of the file, looking for the quote that would close it
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert header.data == b"instruction,output\n" and broken.reason == Reason.UNTERMINATED_QUOTE
    assert broken.raw == b'"oops,a\n'
    assert peak < 2**20, peak  # a 256 KiB read and the 10 kB kept, not the 8 MiB field
    n_after = sum(1 for _ in records)
    assert n_after == -(-(8 * 2**20 - len(stream.head)) // len(stream.line))  # every line after it, the last cut
