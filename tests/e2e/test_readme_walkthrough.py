"""README "Your own data in five commands", run verbatim: its bash block, on a file of 40 real GSM8K problems in
a shape of the user's own (`question`/`answer`, two broken rows), with the real SmolLM2-135M-Instruct."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from tests.fixtures.real_models import REAL_MODELS_DIR, smollm2_instruct  # noqa: F401

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Your own data in five commands"


def walkthrough() -> tuple[str, str]:
    """The section's first bash block (the commands) and the rest of the section (the output snippets)."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split(SECTION, 1)[1].split("\n## ", 1)[0]
    commands = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert commands, "the walkthrough has no bash block"
    return commands.group(1), section[commands.end():]


# What differs from one machine or run to the next, each replaced by a marker on both sides: the folder the
# commands ran in, when a selection was made, rates, durations and thread counts.
VARIES = [
    (re.compile(r"sel-\d{8}T\d{6}Z-"), "sel-<time>-"),
    (re.compile(r"\d+(\.\d+)? (cand|candidates)/s"), "<rate>"),
    (re.compile(r"\d+:\d\d:\d\d"), "<duration>"),
    (re.compile(r"\d+ of \d+ cores"), "<threads>"),
    (re.compile(r"\d+ torch threads"), "<threads>"),
]


def shown_output(snippets: str) -> list[str]:
    """The output lines of the README's ```text block: not the `$ command` lines, not blank ones, not a progress
    bar (a terminal draws it; captured output has none)."""
    block = re.search(r"```text\n(.*?)```", snippets, re.DOTALL)
    assert block, "the walkthrough shows no output"
    return [line for line in block.group(1).splitlines() if line.strip() and not line.startswith("$ ")
            and "━━━" not in line]


def normalized(text: str, folder: Path | None = None) -> str:
    """`text` with its whitespace collapsed, the run's folder written /tmp/wk as the README does, and what varies
    per machine replaced by markers."""
    if folder is not None:
        text = text.replace(str(folder), "/tmp/wk")
    for pattern, marker in VARIES:
        text = pattern.sub(marker, text)
    return " ".join(text.split())


def my_pool(path: Path) -> None:
    """40 GSM8K training problems from the bundled real pool, as `question`/`answer` rows, plus 2 broken rows."""
    rows = [json.loads(line) for line in (ROOT / "capsel" / "data" / "real_pool" / "pool.jsonl").read_text()
            .splitlines()]
    labels = pd.read_csv(ROOT / "capsel" / "data" / "real_pool" / "labels.csv")
    clean = set(labels.loc[labels["lab_label"] == "clean", "lab_id"])
    math = [row for row in rows if row["domain"] == "math" and row["lab_id"] in clean][:40]
    lines = [json.dumps({"question": row["instruction"], "answer": row["output"]}) for row in math]
    lines += [json.dumps({"question": "What is 2 + 2?", "answer": ""}), '{"question": "unterminated']
    path.write_text("\n".join(lines) + "\n")


def test_the_readme_walkthrough_runs_verbatim_and_its_snippets_are_what_it_prints(tmp_path, smollm2_instruct):  # noqa: F811
    commands, snippets = walkthrough()
    my_pool(tmp_path / "my_pool.jsonl")
    env = {key: value for key, value in os.environ.items() if not key.startswith("CAPSEL_")}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}", CAPSEL_MODELS_DIR=str(REAL_MODELS_DIR),
               COLUMNS="100")
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", commands], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    # every line the README shows is printed by the commands, in the same order, up to what varies per machine
    # (lines are compared with whitespace collapsed, so where the terminal wrapped a long line does not matter)
    printed = normalized(done.stdout, tmp_path)
    shown = [normalized(line) for line in shown_output(snippets)]
    assert len(shown) > 20
    at = 0
    for line in shown:
        found = printed.find(line, at)
        assert found >= 0, f"the README shows {line!r}, not printed after {printed[max(at - 200, 0):at]!r}:\n{printed}"
        at = found + len(line)

    con = duckdb.connect(str(tmp_path / "capsel.duckdb"), read_only=True)
    n_candidates = con.execute("select count(*) from candidates").fetchone()[0]
    n_quarantined = con.execute("select count(*) from quarantine").fetchone()[0]
    n_scored = con.execute("select count(*) from divergences where excluded_reason is null").fetchone()[0]
    members = con.execute("select instruction from selection_members join candidates using (candidate_id)").fetchall()
    con.close()
    assert (n_candidates, n_quarantined) == (40, 2) and n_scored >= 36
    published = [path for path in (tmp_path / "my_selection").iterdir() if path.name.startswith("sel-")]
    assert len(published) == 1 and len(members) == round(0.1 * n_scored)
    data = [json.loads(line) for line in (published[0] / "data.jsonl").read_text().splitlines()]
    assert sorted(row["instruction"] for row in data) == sorted(member for (member,) in members)
    scores = pd.read_parquet(tmp_path / "my_scores.parquet")
    assert len(scores) == n_candidates and scores["z"].notna().sum() == n_scored
