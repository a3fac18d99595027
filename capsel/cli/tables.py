"""Tables that read at any width: the table, its cells wrapped at spaces where needed, else one record per row."""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import Console, RenderableType
from rich.measure import Measurement
from rich.segment import Segment
from rich.style import StyleType
from rich.table import Table
from rich.text import Text

from capsel.cli.wrapping import print_unbroken


def print_table(out: Console, table: Table) -> None:
    """`table` when it fits with its cells wrapped at spaces only, else its rows as "key: value" records.

    rich fits a table that is too wide by folding cells, which cuts paths, ids and numbers mid-word.
    """
    keep_words_whole(out, table)
    if widest_line(out, table) <= out.width:
        out.print(table)
        return
    if table.title:
        print_unbroken(out, _text(out, table.title, "table.title"))
    keys = [f"{column.header}:" if column.header else "" for column in table.columns]
    key_width = max(map(cell_len, keys))
    cells = [list(column.cells) for column in table.columns]
    for index, row in enumerate(table.rows):
        out.print()
        for key, column_cells in zip(keys, cells):
            value = _text(out, column_cells[index], row.style)
            # a value too long to sit beside its key goes on the next line, indented
            print_unbroken(out, Text.assemble((key.ljust(key_width), "bold"), " ", value), hang=4)
    if table.caption:
        out.print()
        print_unbroken(out, _text(out, table.caption, "table.caption"))


def keep_words_whole(out: Console, table: Table) -> None:
    """Give each column at least the width of its longest word (header included), so rich never folds one."""
    for column in table.columns:
        cells = [column.header, *column.cells] if table.show_header else list(column.cells)
        column.min_width = max([column.min_width or 0, *(Measurement.get(out, out.options, cell).minimum
                                                         for cell in cells)])


def widest_line(out: Console, renderable: RenderableType) -> int:
    """How many cells the widest line of `renderable` takes on this console, uncropped."""
    lines = Segment.split_lines(out.render(renderable, out.options))
    return max((Segment.get_line_length(line) for line in lines), default=0)


def _text(out: Console, cell: RenderableType, style: StyleType | None = None) -> Text:
    text = out.render_str(cell) if isinstance(cell, str) else cell if isinstance(cell, Text) else Text(str(cell))
    if style:
        text = text.copy()
        text.stylize(style)
    return text


def interval_text(ci95: tuple[float, float] | list[float] | None, digits: int = 4) -> str:
    """A 95% interval as `[lo, hi]`; empty where none was computed (a result stored before intervals were)."""
    return "" if ci95 is None else f"[{ci95[0]:.{digits}f}, {ci95[1]:.{digits}f}]"
