"""At 80 columns, ingest, select, selections, status and the demo's summary cut no path or id and overflow no line.

A path too long for any line may run past the edge, alone on its line; everything else stays within 80 columns.
The commands run in-process on real DuckDB files, each module's console swapped for an 80-column one.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from capsel.cli import ingest, select, selections, status
from capsel.db import open_db
from capsel_lab.cli import demo
from capsel_lab.demo import DemoResult
from tests.integration.pool_files import write_jsonl
from tests.support.scored_pool import make_pool

WIDTH = 80
SELECTION_ID = re.compile(r"sel-\d{8}T\d{6}Z-[0-9a-f]{8}")
# nested under pytest's short base folder: "short" paths fit a line (a table cell would still cut them),
# "deep" ones do not fit any line
DEPTHS = {"short": ("runs",), "deep": ("a_rather_long_project_folder", "experiments_for_this_quarter", "capsel")}


@pytest.fixture(params=list(DEPTHS))
def root(request, tmp_path_factory, monkeypatch) -> Path:
    folder = tmp_path_factory.mktemp("n").joinpath(*DEPTHS[request.param])
    folder.mkdir(parents=True)
    monkeypatch.chdir(folder)
    monkeypatch.setenv("CAPSEL_OUTPUT_ROOT", str(folder / "out"))
    return folder


@pytest.fixture
def narrow(monkeypatch) -> Console:
    """One 80-column console in place of each command module's own."""
    out = Console(width=WIDTH, file=io.StringIO(), color_system=None)
    for module in (ingest, select, selections, status, demo):
        monkeypatch.setattr(module, "console", out)
    return out


def assert_unbroken(output: str, paths: list[str]) -> None:
    lines = output.splitlines()
    for path in paths:
        assert any(path in line for line in lines), f"{path} is cut:\n{output}"
    # only a path longer than a line may run past the edge, as the one word on its line ("path:" or "path,")
    too_wide = [line for line in lines
                if len(line) > WIDTH and not (len(line.split()) == 1 and any(path in line for path in paths))]
    assert not too_wide, "\n".join(too_wide)


def printed(narrow: Console, command, **options) -> str:
    """What `command(**options)` printed on the narrow console."""
    before = len(narrow.file.getvalue())  # type: ignore[attr-defined]
    command(**options)
    return narrow.file.getvalue()[before:]  # type: ignore[attr-defined]


def test_ingest_select_selections_and_status(root, narrow):
    db = root / "capsel.duckdb"
    con = open_db(db)
    make_pool(con, {"code": 30, "math": 50}, n_excluded=1)
    con.close()
    (root / "pool").mkdir()
    pool_file = write_jsonl(root / "pool" / "math_train.jsonl",
                            [{"instruction": f"What is {i} + {i}?", "response": str(2 * i)} for i in range(40)])

    ingested = printed(narrow, ingest.ingest, paths=[pool_file], domain="math", db=db)
    skipped = printed(narrow, ingest.ingest, paths=[pool_file], domain="math", db=db)
    published = [printed(narrow, select.select, budget="40", out="s", db=db),
                 printed(narrow, select.select, budget="10%", out="s", total=True,
                         method="random", seed=3, db=db)]
    listed = printed(narrow, selections.selections, db=db)
    shown = printed(narrow, status.status, db=db)

    assert ingested.lstrip().startswith("ingested") and skipped.lstrip().startswith("skipped")
    for output in (ingested, skipped):
        assert_unbroken(output, [str(pool_file)])
    paths = []
    for output in published:
        (selection_id,) = set(SELECTION_ID.findall(output))
        paths.append(str(root / "s" / selection_id))  # a typed --out is relative to the working directory
        assert_unbroken(output, paths[-1:])
    assert "seed 3" in listed
    assert_unbroken(listed, paths)
    assert "quarantined" in shown
    assert_unbroken(shown, [str(db)])


def test_demo_summary(root, narrow):
    selection = root / "out" / "demo" / "selections" / "sel-20260101T000000Z-0123abcd"
    selection.mkdir(parents=True)
    ranks = {"n_junk": 6, "median": 97.5, "min": 80.0, "max": 100.0, "below_p5": 0.0, "above_p95": 0.5}
    result = DemoResult(
        counts={"rows_read": 130, "duplicates": 4, "quarantined": 3, "inserted": 123, "scored": 120, "excluded": 3,
                "excluded_by_reason": {"short_response": 3}, "selected": 12, "candidates_per_s": 1.5},
        junk={"n": 6, "ranks": {"all junk": {"cap": ranks, "ppl": ranks}, "salad": {"cap": ranks, "ppl": ranks}},
              "selections": {"budget": "10%", "ppl_guard": 95.0, "methods": {
                  method: {"n_members": 12, "n_junk": 1, "junk_by_kind": {"salad": 1}}
                  for method in ("cap", "cap_guard", "ppl", "random")}}},
        paths={"selection": selection, "data": selection / "data.jsonl",
               "report": selection / "report" / "index.html", "db": root / "out" / "demo" / "capsel.duckdb"},
        selection_id=selection.name, gate_success=True, prompt_format="chat",
    )
    profile = [root / "out" / "demo" / "profile" / name for name in ("profile.csv", "verdict.json")]

    summary = demo.write_summary(result)
    demo._print_result(result, profile, summary)

    output = narrow.file.getvalue()  # type: ignore[attr-defined]
    assert summary == root / "out" / "demo" / demo.SUMMARY_FILE and summary.is_file()
    assert "CAP z with PPL guard" in output and "random control" in output
    assert_unbroken(output, [*(str(path) for path in result.paths.values()), *map(str, profile), str(summary)])

