"""Lines break between words only: a word longer than the line keeps a line of its own, whole."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.table import Table

from capsel.cli.tables import print_table
from capsel.cli.wrapping import line_breaks, print_unbroken

PATH = "/data/a_rather_long_folder/another_long_folder/file.jsonl"  # 56 characters


def _console(width: int) -> Console:
    return Console(width=width, file=io.StringIO(), color_system=None)


@pytest.mark.parametrize(("plain", "width", "lines"), [
    ("short line", 20, ["short line"]),
    (f"wrote {PATH}: 4 rows", 80, [f"wrote {PATH}: 4 rows"]),
    (f"wrote {PATH}: 4 rows", 40, ["wrote", f"{PATH}:", "4 rows"]),
    (f"  db: {PATH}", 40, ["  db:", PATH]),
])
def test_lines_break_between_words(plain, width, lines):
    breaks = [0, *line_breaks(plain, width, width), len(plain)]
    assert [plain[start:end].rstrip() for start, end in zip(breaks, breaks[1:])] == lines


def test_later_lines_hang():
    out = _console(40)
    print_unbroken(out, f"selection: {PATH}", hang=4)
    assert out.file.getvalue().splitlines() == ["selection:", f"    {PATH}"]


def _table(path: str) -> Table:
    table = Table(title="1 published selection(s)")
    for header in ("selection", "members", "path"):
        table.add_column(header)
    table.add_row("sel-20260101T000000Z-0123abcd", "12", path)
    return table


def test_a_table_that_fits_stays_a_table():
    out = _console(120)
    print_table(out, _table(PATH))
    assert any("sel-20260101T000000Z-0123abcd" in line and PATH in line for line in out.file.getvalue().splitlines())


def test_a_table_too_wide_becomes_records():
    out = _console(60)
    print_table(out, _table(PATH))
    assert out.file.getvalue().splitlines() == [
        "1 published selection(s)", "", "selection: sel-20260101T000000Z-0123abcd", "members:   12", "path:",
        f"    {PATH}",
    ]
