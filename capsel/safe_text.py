"""Text from a pool (domains, file names, rows) made safe to show: control characters visible, markup inert.

Pool files are anyone's: a domain can hold an ANSI escape that recolours or retitles the terminal, a bidi
override that reverses what follows it, or Markdown and HTML that a card or a Prefect artifact would run.
"""

from __future__ import annotations

import html
import re

# C0 (tab, newline and CR included: one data string is one line), DEL and C1 (ESC, CSI, OSC start sequences),
# the bidi embeddings, overrides and isolates (they reorder the text after them), and the Unicode line and
# paragraph separators (some terminals break lines there).
ABOVE_C0 = "\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
CONTROL = re.compile(f"[\x00-\x1f{ABOVE_C0}]")
# a JSON encoder escapes C0 itself and may leave the rest raw (orjson does): in a terminal they act all the same
JSON_RAW = re.compile(f"[{ABOVE_C0}]")
NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}

# Inline Markdown that a name could start: code spans, emphasis, links and images, strikethrough, the Hub's
# TeX math, table cell breaks; and the backslash, which would escape our own escapes. As numeric entities,
# which no Markdown parser reads as syntax, in table cells and running text alike.
MARKDOWN = str.maketrans({char: f"&#{ord(char)};" for char in "\\`*_[]|~$"})


def visible(text: object, multiline: bool = False) -> str:
    r"""`text` with every control character written out as its escape (ESC as \x1b, a newline as \n).

    With `multiline`, newlines are kept (a message of several lines that quotes data).
    """
    def shown(match: re.Match[str]) -> str:
        char = match.group()
        if multiline and char == "\n":
            return char
        code = ord(char)
        return NAMED.get(char) or (f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}")

    return CONTROL.sub(shown, str(text))


def json_text(document: str) -> str:
    """A JSON document with the control characters JSON allows raw written as \\u escapes: the same values, safe
    to show in a terminal (they can only stand inside strings, where an escape means the character itself)."""
    return JSON_RAW.sub(lambda match: f"\\u{ord(match.group()):04x}", document)


def markdown_text(value: object) -> str:
    """`value` as Markdown that shows it as typed: HTML and Markdown syntax as entities, lines joined by <br>."""
    lines = str(value).split("\n")
    return "<br>".join(html.escape(visible(line), quote=False).translate(MARKDOWN) for line in lines)


def html_text(value: object) -> str:
    """`value` as HTML text or attribute value, control characters visible."""
    return html.escape(visible(value))
