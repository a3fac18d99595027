"""Data in rich output: a line's template is markup, what fills it is text; table cells and tree labels too."""

import io

import pytest
from rich.console import Console
from rich.text import Span

from capsel.cli.tables import print_table
from capsel.terminal_text import FIELD, TextTable, TextTree, markup, plain

HOSTILE = {
    "[/]": "[/]",
    "[bold red]x[/]": "[bold red]x[/]",
    "[link=file:///etc/passwd]x[/link]": "[link=file:///etc/passwd]x[/link]",
    "\x1b[31mred": "\\x1b[31mred",
    "\x1b]8;;http://evil\x1b\\x": "\\x1b]8;;http://evil\\x1b\\x",
    "a\rb\nc": "a\\rb\\nc",
    "\u202eabc": "\\u202eabc",
    "ends with \\": "ends with \\",
    ":thumbs_up:": ":thumbs_up:",
    "{0} {name}": "{0} {name}",
    FIELD: FIELD,
}


def rendered(renderable, width: int = 200) -> str:
    """What a colour terminal receives."""
    out = Console(file=io.StringIO(), force_terminal=True, color_system="truecolor", width=width)
    out.print(renderable)
    return out.file.getvalue()


@pytest.mark.parametrize(("data", "shown"), HOSTILE.items())
def test_markup_fills_fields_with_the_data_as_typed(data, shown):
    line = markup("[green]ok[/] {} [bold]{}[/]{}", data, data, "!")
    assert line.plain == f"ok {shown} {shown}!"
    start = len(f"ok {shown} ")
    assert line.spans == [Span(0, 2, "green"), Span(start, start + len(shown), "bold")]


def test_markup_takes_format_specs_names_and_attributes():
    class Outcome:
        path = "[x].jsonl"

    line = markup("[yellow]read[/] {n:,} rows of {o.path} ({share:.0%})", n=12345, o=Outcome, share=0.5)
    assert line.plain == "read 12,345 rows of [x].jsonl (50%)"


@pytest.mark.parametrize("data", HOSTILE)
def test_no_escape_sequence_from_data_reaches_the_terminal(data):
    output = rendered(markup("[bold]{}[/] [green]{}[/]", data, data))
    # rich's own styles are SGR sequences; no colour, hyperlink (OSC), CR or bidi override comes from the data
    assert "\x1b[31m" not in output and "\x1b]" not in output and "\r" not in output and "\u202e" not in output


def test_plain_is_text_with_control_characters_visible():
    assert plain("[b]\x1b", "bold").plain == "[b]\\x1b" and plain("x", "bold").style == "bold"
    assert plain("two\nlines\x07", multiline=True).plain == "two\nlines\\x07"


def test_text_table_cells_are_data_and_print_whole():
    table = TextTable("domain", "n")
    for data in HOSTILE:
        table.add_row(data, "1")
    table.add_row(markup("[bold]{}[/]", "total"), "9")  # Text keeps its own style
    out = Console(file=io.StringIO(), width=200, record=True)
    print_table(out, table)
    text = out.export_text()
    for shown in HOSTILE.values():
        for line in shown.split("\n"):
            assert line in text
    assert "total" in text and "\x1b" not in out.file.getvalue()


def test_text_table_falls_back_to_records_when_narrow():
    table = TextTable("domain", "path")
    table.add_row("[/]" * 10, "\x1b[31m" + "x" * 60)
    out = Console(file=io.StringIO(), width=30, record=True)
    print_table(out, table)
    text = out.export_text()
    assert "domain:\n    [/][/]" in text and "\\x1b[31mxxx" in text


def test_text_tree_labels_are_data_at_every_depth():
    tree = TextTree(markup("[bold]candidate {}[/]", "[/]"))
    child = tree.add("domain [bold red]x[/]")
    child.add("\x1b]8;;http://evil\x1b\\")
    assert isinstance(child, TextTree)
    out = Console(file=io.StringIO(), width=200, record=True)
    out.print(tree)
    text = out.export_text()
    assert "candidate [/]" in text and "domain [bold red]x[/]" in text and "\\x1b]8;;http://evil\\x1b\\" in text
