"""Data strings in rich output (lines, tables, trees, progress bars): shown as typed, never read as markup."""

from __future__ import annotations

import string
from typing import Any

from rich.console import RenderableType
from rich.style import StyleType
from rich.table import Table
from rich.text import Span, Text
from rich.tree import Tree

from capsel.safe_text import visible


def plain(value: object, style: StyleType = "", multiline: bool = False) -> Text:
    """`value` as rich Text: no markup, emoji or highlighting is read in it, control characters are visible
    (newlines too, unless `multiline`)."""
    return Text(visible(value, multiline), style=style)


# stands in for each field while the template's own markup is read; the data goes in only after that, so no
# escaping is needed (rich's escape gets a trailing backslash wrong unless a tag follows it)
FIELD = "\ue000"


class _Fields(string.Formatter):
    """str.format that sets each field's text aside (control characters visible) and leaves FIELD in its place."""

    def __init__(self) -> None:
        self.values: list[str] = []

    def format_field(self, value: Any, format_spec: str) -> str:
        self.values.append(visible(super().format_field(value, format_spec)))
        return FIELD


def markup(template: str, /, *args: object, **kwargs: object) -> Text:
    """`template`, capsel's own rich markup with str.format fields, filled with data shown as plain text.

    markup("[green]ingested[/] {path}: {n:,} rows", path=path, n=n) styles the word, never the path; a field
    inside a tag ("[bold]{id}[/]") takes the tag's style.
    """
    fields = _Fields()
    # emoji off: a ":thumbs_up:" in a file name is shown as typed (templates use none)
    template_text = Text.from_markup(fields.vformat(template, args, kwargs), emoji=False)
    offsets = [i for i, char in enumerate(template_text.plain) if char == FIELD]
    values = iter(fields.values)
    filled = Text(style=template_text.style)
    for piece in template_text.divide(sorted({*offsets, *(i + 1 for i in offsets)})):
        if piece.plain == FIELD:
            value = next(values)
            piece = Text(value, spans=[Span(0, len(value), span.style) for span in piece.spans])
        filled.append_text(piece)
    return filled


class TextTable(Table):
    """A rich Table whose str cells are data: shown as typed, never read as markup (pass Text to style one)."""

    def add_row(self, *renderables: RenderableType | None, style: StyleType | None = None,
                end_section: bool = False) -> None:
        """Add a row; each str cell becomes plain Text."""
        super().add_row(*(plain(cell) if isinstance(cell, str) else cell for cell in renderables),
                        style=style, end_section=end_section)


class TextTree(Tree):
    """A rich Tree whose str labels, its own and its children's, are data: shown as typed, never as markup."""

    def __init__(self, label: RenderableType, **options: Any) -> None:
        super().__init__(plain(label) if isinstance(label, str) else label, **options)

    def add(self, label: RenderableType, *, style: StyleType | None = None, guide_style: StyleType | None = None,
            expanded: bool = True, highlight: bool | None = False) -> TextTree:
        """Add a child TextTree, styled like this one unless told otherwise (as Tree.add does)."""
        node = TextTree(label, style=self.style if style is None else style,
                        guide_style=self.guide_style if guide_style is None else guide_style,
                        expanded=expanded, highlight=self.highlight if highlight is None else highlight)
        self.children.append(node)
        return node
