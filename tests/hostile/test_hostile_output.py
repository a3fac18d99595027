"""A hostile pool through the real CLI: names and texts holding rich markup, terminal escapes, CR, bidi overrides,
HTML and Markdown are printed as typed, never run, and no command fails after its commit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import duckdb
import pytest
from markdown_it import MarkdownIt

from tests.support.card_tables import card_tables

pytestmark = pytest.mark.e2e

# each domain as the pool spells it -> as the terminal must show it
DOMAINS = {
    "[/]": "[/]",
    "[bold red]x[/]": "[bold red]x[/]",
    "[link=file:///etc/passwd]x[/link]": "[link=file:///etc/passwd]x[/link]",
    "\x1b[31mred": "\\x1b[31mred",
    "\x1b]8;;http://evil\x1b\\": "\\x1b]8;;http://evil\\x1b\\",
    "cr\rhere": "cr\\rhere",
    "\u202eevil": "\\u202eevil",
    "<script>alert(1)</script>": "<script>alert(1)</script>",
    "| x |": "| x |",
    "[click](http://evil)": "[click](http://evil)",
}
# file names: markup, and an escape code with a bidi override (a file name can hold both)
FILES = ("[bold]x.jsonl", "\x1b[31mred\u202e.jsonl")
RAW = ("\x1b", "\r", "\u202e")  # none may reach stdout or stderr as it is


def capsel(root: Path, *args: str, closed_stdout: bool = False) -> subprocess.CompletedProcess:
    """The CLI as a user (or a scheduler) runs it in `root`; with `closed_stdout` its reader is already gone."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("CAPSEL_")}
    env.update(CAPSEL_DB_PATH=str(root / "capsel.duckdb"), CAPSEL_OUTPUT_ROOT=str(root / "out"), COLUMNS="200",
               OMP_NUM_THREADS="1")
    command = [sys.executable, "-m", "capsel", *args]
    if not closed_stdout:
        return subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    process = subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    process.stdout.close()
    _, stderr = process.communicate(timeout=300)
    return subprocess.CompletedProcess(command, process.returncode, "", stderr)


def ok(done: subprocess.CompletedProcess) -> str:
    """stdout of a run that exited 0 and wrote no raw control character anywhere."""
    assert done.returncode == 0, done.stderr
    for stream in (done.stdout, done.stderr):
        assert not [char for char in RAW if char in stream], stream
    return done.stdout


def one_object(done: subprocess.CompletedProcess) -> dict:
    payload = json.loads(ok(done))  # fails on a table, a progress line or a second object
    assert payload["ok"] is True
    return payload


def query(root: Path, sql: str) -> list:
    con = duckdb.connect(str(root / "capsel.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


# the first half of the domains is in the first file, the rest in the second
HALVES = (list(DOMAINS)[: len(DOMAINS) // 2], list(DOMAINS)[len(DOMAINS) // 2:])


def write_pool(folder: Path) -> None:
    """Three rows per domain, texts as hostile as the names; the first file ends in a broken line holding an ESC."""
    for name, domains in zip(FILES, HALVES):
        lines = [json.dumps({"domain": domain, "instruction": f"Question {i} about {domain} [bold]\x1b[31m<b>",
                             "response": f"Answer {i}: {domain} | done \r\u202e"}, ensure_ascii=False)
                 for domain in domains for i in range(3)]
        if name == FILES[0]:
            lines.append("\x1b[31m[/] not json")
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A store holding the hostile pool: the first file ingested as a person reads it, the second with --json."""
    root = tmp_path_factory.mktemp("hostile")
    write_pool(root)
    shown = ok(capsel(root, "ingest", FILES[0]))
    assert f"ingested {root}/[bold]x.jsonl: 16 rows" in shown
    for domain in HALVES[0]:
        assert DOMAINS[domain] in shown
    report = one_object(capsel(root, "ingest", FILES[1], "--json"))
    assert [Path(file["path"]).name for file in report["files"]] == [FILES[1]]
    return root


def test_status_and_quarantine_show_every_name_as_typed(store):
    shown = ok(capsel(store, "status"))
    for escaped in DOMAINS.values():
        assert escaped in shown
    status = one_object(capsel(store, "status", "--json"))
    assert {row["domain"] for row in status["domains"]} >= set(DOMAINS)  # JSON keeps the data exact

    listing = ok(capsel(store, "quarantine"))
    assert "[bold]x.jsonl:" in listing and "\\x1b[31m[/] not json" in listing
    assert one_object(capsel(store, "quarantine", "--json"))["rows"][0]["raw_text"] == "\x1b[31m[/] not json"


def test_select_publishes_once_per_run_even_when_printing_fails(store):
    def n_published() -> int:
        return query(store, "select count(*) from selections where status = 'published'")[0][0]

    first = n_published()
    shown = ok(capsel(store, "select", "--budget", "2", "--method", "random", "--out", "sels"))
    assert n_published() == first + 1 and "published sel-" in shown
    for escaped in DOMAINS.values():
        assert escaped in shown

    # select is not idempotent by design: each run publishes one selection under a fresh id (its UTC time and
    # members digest, capsel/publish/selection_id.py), so a retry of a run that succeeded publishes again
    payload = one_object(capsel(store, "select", "--budget", "2", "--method", "random", "--out", "sels", "--json"))
    assert n_published() == first + 2 and payload["n_members"] == 2 * len(DOMAINS)
    assert {entry["domain"] for entry in payload["manifest"]["domains"]} == set(DOMAINS)

    # stdout gone before the summary (`capsel select | head -0`): still a success that says what it published,
    # so a scheduler does not retry it into a second selection
    for extra in ((), ("--json",)):
        before = n_published()
        closed = capsel(store, "select", "--budget", "2", "--method", "random", "--out", "sels", *extra,
                        closed_stdout=True)
        assert closed.returncode == 0, closed.stderr
        assert n_published() == before + 1
        newest = query(store, "select selection_id, out_dir from selections order by created_at desc limit 1")[0]
        assert f"published {newest[0]} with {2 * len(DOMAINS)} members at {newest[1]}" in closed.stderr
        assert Path(newest[1], "manifest.json").is_file()

    listed = one_object(capsel(store, "selections", "--json"))["selections"]
    assert len(listed) == n_published() == first + 4
    ok(capsel(store, "selections"))


def test_lineage_shows_names_and_texts_as_typed(store):
    for domain, file in (("\x1b[31mred", "[bold]x.jsonl"), ("cr\rhere", "\\x1b[31mred\\u202e.jsonl")):
        candidate = query(store, f"select candidate_id from candidates where domain = '{domain}'")[0][0]
        tree = ok(capsel(store, "lineage", candidate))
        assert f"(domain {DOMAINS[domain]})" in tree and f"file {store}/{file}, row" in tree
        # the preview puts the text on one line (a CR is whitespace there), the rest shown as typed
        assert "[bold]\\x1b[31m<b>" in tree and "| done \\u202e" in tree
    ok(capsel(store, "select", "--budget", "1", "--method", "random", "--out", "lin"))
    selection = query(store, "select selection_id from selections order by created_at desc limit 1")[0][0]
    ok(capsel(store, "lineage", selection))
    assert one_object(capsel(store, "lineage", selection, "--json"))["selection"]["selection_id"] == selection


class Elements(HTMLParser):
    """Every start tag of a page, and its text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def parsed(html: str) -> Elements:
    page = Elements()
    page.feed(html)
    return page


def test_card_and_report_show_names_as_text(store):
    ok(capsel(store, "select", "--budget", "2", "--method", "random", "--out", "cards"))
    folder = next((store / "cards").glob("sel-*"))
    card = (folder / "README.md").read_text()
    assert not [char for char in RAW if char in card]
    rendered = parsed(MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(card))
    assert "script" not in rendered.tags and "a" not in rendered.tags and "strong" not in rendered.tags
    domains = next(table for table in card_tables(card) if table[0][0] == "domain")
    assert [len(row) for row in domains] == [10] * (1 + len(DOMAINS))  # no | or newline split a row
    assert {"".join(parsed(row[0]).text) for row in domains[1:]} == set(DOMAINS.values())

    page = parsed((folder / "report" / "index.html").read_text())
    assert "script" not in page.tags and "a" in page.tags  # the page's own link to the gate report only
    assert set(DOMAINS.values()) <= set(page.text)
