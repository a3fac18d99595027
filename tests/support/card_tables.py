"""A dataset card read back as a reader sees it: its YAML metadata and its tables as rendered cells."""

from __future__ import annotations

import re

import yaml
from markdown_it import MarkdownIt


def card_metadata(card: str) -> dict:
    """The YAML block at the top of a card."""
    return yaml.safe_load(card.split("---\n")[1])


def card_tables(card: str) -> list[list[list[str]]]:
    """Every table as rows of cell HTML, by a GFM table parser (markdown-it) independent of the card's code."""
    rendered = MarkdownIt("commonmark").enable("table").render(card)
    return [[re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S) for row in re.findall(r"<tr>(.*?)</tr>", table, re.S)]
            for table in re.findall(r"<table>(.*?)</table>", rendered, re.S)]
