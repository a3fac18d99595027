"""Data strings made safe to show: control characters visible, Markdown and HTML inert, each as typed."""

import json

import orjson
import pytest
from markdown_it import MarkdownIt

from capsel.safe_text import html_text, json_text, markdown_text, visible


@pytest.mark.parametrize(("text", "shown"), [
    ("plain domain", "plain domain"),
    ("\x1b[31mred", "\\x1b[31mred"),
    ("\x1b]8;;http://evil\x1b\\link", "\\x1b]8;;http://evil\\x1b\\link"),
    ("a\rb\nc\td", "a\\rb\\nc\\td"),
    ("nul\x00 bell\x07 del\x7f csi\x9b", "nul\\x00 bell\\x07 del\\x7f csi\\x9b"),
    ("\u202eevil\u202c", "\\u202eevil\\u202c"),
    ("iso\u2066late\u2069 mark\u200f", "iso\\u2066late\\u2069 mark\\u200f"),
    ("line\u2028sep", "line\\u2028sep"),
    ("naïve → 数学 👨\u200d👩", "naïve → 数学 👨\u200d👩"),  # printable text and emoji joiners stay
    ("[/] <script> back\\slash", "[/] <script> back\\slash"),
])
def test_visible_writes_out_control_characters_and_keeps_the_rest(text, shown):
    assert visible(text) == shown


def test_visible_multiline_keeps_newlines_only():
    assert visible("two\nlines\r\x1b", multiline=True) == "two\nlines\\r\\x1b"


def test_visible_takes_any_object():
    assert visible(12) == "12"


@pytest.mark.parametrize(("text", "markdown"), [
    ("code", "code"),
    ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
    ("| x |", "&#124; x &#124;"),
    ("[x](javascript:alert(1))", "&#91;x&#93;(javascript:alert(1))"),
    ("*bold* `code` ~~s~~ $x$ _i_", "&#42;bold&#42; &#96;code&#96; &#126;&#126;s&#126;&#126; &#36;x&#36; &#95;i&#95;"),
    ("back\\|slash", "back&#92;&#124;slash"),
    ("two\nlines", "two<br>lines"),
    ("\x1b[31m", "&#92;x1b&#91;31m"),  # the escape shown, its backslash kept from escaping
    ("a & b", "a &amp; b"),
])
def test_markdown_text_is_entities_for_markup(text, markdown):
    assert markdown_text(text) == markdown


@pytest.mark.parametrize("text", ["[x](http://evil)", "<img src=x onerror=alert(1)>", "*a* _b_ `c`", "| a | b |",
                                  "back\\", "$\\frac{1}{2}$"])
def test_markdown_text_renders_as_the_text_itself(text):
    rendered = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(f"- {markdown_text(text)}\n")
    assert rendered == f"<ul>\n<li>{html_text(text).replace('&#x27;', chr(39))}</li>\n</ul>\n"


def test_html_text_escapes_attributes_and_control_characters():
    assert html_text("<a href='x'>\x1b") == "&lt;a href=&#x27;x&#x27;&gt;\\x1b"


def test_json_text_escapes_what_json_leaves_raw_and_keeps_the_values():
    payload = {"domain": "\u202eevil\x9b[31m\x7f\u2028", "n": [1, 2], "naïve": "数学\x1b\n"}
    document = json_text(orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode())
    assert json.loads(document) == payload
    assert document.isascii() is False and "数学" in document  # printable text stays as it is
    assert not any(char in document for char in "\u202e\x9b\x7f\u2028\x1b")
    assert '"\\u202eevil\\u009b[31m\\u007f\\u2028"' in document
