"""A Markdown table from a header and rows of cells, as the rendered README tables are written."""

from __future__ import annotations


def table_row(cells: list[str]) -> str:
    """One Markdown table row."""
    return "| " + " | ".join(cells) + " |"


def table(header: list[str], rows: list[list[str]], numbers_from: int | None = None) -> str:
    """A Markdown table; its columns from `numbers_from` on are right-aligned."""
    rule = ["---:" if numbers_from is not None and column >= numbers_from else "---" for column in range(len(header))]
    lines = [table_row(header), "|" + "".join(f"{cell}|" for cell in rule), *(table_row(row) for row in rows)]
    return "\n".join(lines) + "\n"
