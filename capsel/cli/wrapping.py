"""Lines wrapped at spaces only, so a path or an id is never cut in the middle of its name."""

from __future__ import annotations

import re

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

WORD = re.compile(r"\S+\s*")


def print_unbroken(out: Console, text: str | Text, hang: int = 0) -> None:
    """Print `text` (markup allowed) wrapped to the console at spaces, every line after the first indented by `hang`.

    rich folds a word longer than the line across lines, which cuts a path in two; here such a word gets a
    line of its own and runs past the edge instead, so it can still be copied whole.
    """
    text = out.render_str(text) if isinstance(text, str) else text
    first = True
    for line in text.split("\n", allow_blank=True):
        first_width = out.width if first else out.width - hang
        for piece in line.divide(line_breaks(line.plain, first_width, out.width - hang)):
            piece.rstrip()
            out.print(piece if first else Text(" " * hang) + piece, soft_wrap=True)
            first = False


def line_breaks(plain: str, first_width: int, width: int) -> list[int]:
    """Offsets that split `plain` between words into lines of `first_width`, then `width`, cells at most."""
    breaks: list[int] = []
    column, limit, has_word = cell_len(plain) - cell_len(plain.lstrip()), first_width, False
    for match in WORD.finditer(plain):
        if has_word and column + cell_len(match.group().rstrip()) > limit:
            breaks.append(match.start())
            column, limit = 0, width
        column += cell_len(match.group())
        has_word = True
    return breaks
