"""Every page of the docs site stays short enough to read: no page over 5,000 words, no bullet over 150.

A page is its Markdown source: the file mkdocs.yml's nav names under docs/, or the repository file the hook
(docs/gen_reference.py) includes in its place, with the README sections its `<!-- readme: -->` markers pull in.
The CLI and flow-parameter references the hook generates from the code are tables to look things up in, and count
as their source. Run as a script (`python tests/unit/test_docs_size.py [N]`), it prints the N longest pages and
bullets.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MAX_PAGE_WORDS = 5_000
MAX_BULLET_WORDS = 150
COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
ITEM = re.compile(r"^( *)(?:[-*+]|\d+[.)])(?: |$)")
FENCE = re.compile(r"^ *(```|~~~)")


def words(markdown: str) -> int:
    """The words of `markdown`, its `<!-- -->` markers left out (they are the hook's and the tables', not text)."""
    return len(COMMENT.sub(" ", markdown).split())


def bullets(markdown: str) -> list[str]:
    """Each outermost list item of `markdown` with all that belongs to it: its indented continuation lines, the
    unindented lines that continue its paragraph, its nested items and blocks; a marker in fenced code is no item."""
    items: list[list[str]] = []
    current: list[str] | None = None
    indent = 0
    fence: str | None = None  # the fence a code block opened with, while in one
    blank = False
    for line in COMMENT.sub("", markdown).splitlines():
        if fence is not None:
            fence = None if line.strip().startswith(fence) else fence
            if current is not None:
                current.append(line)
            continue
        if not line.strip():
            blank = True
            if current is not None:
                current.append(line)
            continue
        depth = len(line) - len(line.lstrip())
        item = ITEM.match(line)
        if current is not None and (depth > indent or (not blank and not item and not line.lstrip().startswith("#"))):
            current.append(line)  # indented: the item's own; unindented right after its text: a lazy continuation
        elif item:
            current, indent = [line], len(item.group(1))
            items.append(current)
        else:
            current = None
        opened = FENCE.match(line)
        fence = opened.group(1) if opened else None
        blank = False
    return ["\n".join(item) for item in items]


@functools.cache
def hook() -> ModuleType:
    """docs/gen_reference.py, the mkdocs hook, loaded as mkdocs loads it (from its file)."""
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "docs" / "gen_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def nav_pages() -> list[str]:
    """The pages mkdocs.yml's nav names, in order."""
    def leaves(node: object) -> list[str]:
        if isinstance(node, str):
            return [node]
        values = node.values() if isinstance(node, dict) else node if isinstance(node, list) else []
        return [page for value in values for page in leaves(value)]

    return leaves(yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"])


def site_pages() -> dict[str, Path]:
    """Each page of the site (its path under docs/) and the file that holds its Markdown."""
    included = hook().included_pages()
    pages = {page: ROOT / included.get(page, f"docs/{page}") for page in nav_pages()}
    return pages | {page: ROOT / source for page, source in included.items()}  # built even if the nav left it out


def page_text(page: str) -> str:
    """The Markdown of `page` as a reader gets it: its file, each README section it includes put in."""
    text = site_pages()[page].read_text(encoding="utf-8")
    return hook().MARKER.sub(lambda match: hook().readme_section(match.group("heading"), page)
                             if match.group("heading") else match.group(0), text)


def long_bullets(text: str) -> list[str]:
    """The bullets of `text` over the limit, each as its word count and first words."""
    return [f"{words(item)} words: {' '.join(item.split()[:12])}" for item in bullets(text)
            if words(item) > MAX_BULLET_WORDS]


def test_the_counts_find_an_oversize_page_and_bullet():
    assert words("# A page\n\n" + "word " * (MAX_PAGE_WORDS + 1)) > MAX_PAGE_WORDS
    assert words("<!-- table: a docs/lab/a.json -->\none two\n<!-- /table -->") == 2
    item = "- first line\n  continued\nlazily continued\n\n  a second paragraph\n  - nested " + "word " * 150
    found = bullets("text\n\n" + item + "\n\n- next\n\n```\n- not an item\n```\nafter\n")
    assert [words(bullet) for bullet in found] == [161, 2]
    assert [found.split(":")[0] for found in long_bullets(item)] == ["161 words"]
    assert long_bullets("- " + "word " * (MAX_BULLET_WORDS - 1) + "\n\n" + "word " * 10) == []


def test_the_pages_are_the_navs_and_every_file_the_hook_includes_is_in_the_nav():
    pages = site_pages()
    assert pages["index.md"] == ROOT / "README.md" and pages["getting-started.md"] == ROOT / "docs/getting-started.md"
    assert {"benchmarks/notes.md", "lab/notes.md", "benchmarks/notes/cpu-scoring.md"} <= set(pages)
    assert all(path.is_file() for path in pages.values())
    assert set(hook().included_pages()) <= set(nav_pages())
    assert "<!-- readme:" not in page_text("your-data.md") and "## Your own data in five commands" in page_text(
        "your-data.md")


@pytest.mark.parametrize("page", sorted(site_pages()))
def test_no_page_is_over_5000_words_nor_any_bullet_over_150(page):
    text = page_text(page)
    assert words(text) <= MAX_PAGE_WORDS, f"{page}: {words(text)} words"
    assert not long_bullets(text), f"{page}:\n" + "\n".join(long_bullets(text))


if __name__ == "__main__":
    top = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    texts = {page: page_text(page) for page in site_pages()}
    for count, page in sorted(((words(text), page) for page, text in texts.items()), reverse=True)[:top]:
        print(f"{count:6d}  {page}")
    every = sorted(((words(item), page, " ".join(item.split()[:10])) for page, text in texts.items()
                    for item in bullets(text)), reverse=True)
    print()
    for count, page, start in every[:top]:
        print(f"{count:6d}  {page}: {start}")
    print(f"\nbullets over {MAX_BULLET_WORDS}: {sum(count > MAX_BULLET_WORDS for count, _, _ in every)}")
