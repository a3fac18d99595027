"""Hostile input files through `capsel ingest` as a user types it: each is quarantined with a reason, skipped and
reported, or refused with one clear line, and never hangs (issue 19, findings 6 to 8)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import duckdb
import pytest

pytestmark = pytest.mark.e2e


def capsel(tmp_path, *args, timeout=120):
    env = {key: value for key, value in os.environ.items() if not key.startswith("CAPSEL_")}
    env.update(CAPSEL_DB_PATH=str(tmp_path / "capsel.duckdb"), COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "capsel", *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=timeout)


def one_line_error(done: subprocess.CompletedProcess, code: int) -> str:
    """The failure's single `error:` line, after checking the exit code and that no traceback was printed."""
    assert done.returncode == code, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    message = " ".join(done.stderr.split())
    assert message.startswith("error: ") and message.count("error: ") == 1, done.stderr
    return message


def ingested(tmp_path, *args) -> dict:
    done = capsel(tmp_path, "ingest", *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def quarantine_reasons(tmp_path) -> dict[int, str]:
    con = duckdb.connect(str(tmp_path / "capsel.duckdb"), read_only=True)
    try:
        return dict(con.execute("select source_row, reason from quarantine order by source_row").fetchall())
    finally:
        con.close()


def test_rows_repeating_a_key_are_quarantined_not_collapsed_into_duplicates(tmp_path):
    # 100 distinct rows whose repeated key would make them all one candidate if the last key silently won
    lines = [f'{{"instruction": "question {i}", "output": "a", "instruction": "same", "domain": "d"}}'
             for i in range(100)]
    (tmp_path / "pool.jsonl").write_text("\n".join(lines) + '\n{"instruction": "fine", "output": "a", "domain": "d"}\n')
    totals = ingested(tmp_path, "pool.jsonl")["totals"]
    assert (totals["n_read"], totals["n_inserted"], totals["n_duplicates"], totals["n_quarantined"]) == (101, 1, 0, 100)
    assert set(quarantine_reasons(tmp_path).values()) == {"duplicate_key"}


def test_a_json_array_counts_every_element_and_keeps_those_after_a_broken_one(tmp_path):
    big = "9" * 5000
    elements = [
        '{"instruction": "q1", "output": "a"}',
        '{"instruction": "q2", "output": tru}',  # broken
        '{"instruction": "q3", "output": "\\ud800"}',  # a lone surrogate, as a JSONL line holding it
        f'{{"instruction": "q4", "output": "a", "id": {big}}}',  # a huge number in a field capsel does not read
        '{"instruction": "q5", "output": "a", "output": "b"}',
        '{"instruction": "q6", "output": "a"}',
    ]
    (tmp_path / "pool.json").write_text("[" + ",\n".join(elements) + "]\n")
    (tmp_path / "same.jsonl").write_text("\n".join(elements) + "\n")
    report = ingested(tmp_path, "pool.json", "--domain", "d")
    totals = report["totals"]
    assert (totals["n_read"], totals["n_inserted"], totals["n_quarantined"]) == (6, 3, 3)
    assert quarantine_reasons(tmp_path) == {2: "not_json", 3: "not_json", 5: "duplicate_key"}
    lines = ingested(tmp_path, "same.jsonl", "--domain", "d")["totals"]  # JSONL decides the same for each row
    assert (lines["n_read"], lines["n_duplicates"], lines["n_quarantined"]) == (6, 3, 3)


def test_a_fifo_named_as_input_is_refused_at_once(tmp_path):
    os.mkfifo(tmp_path / "pool.jsonl")
    refused = capsel(tmp_path, "ingest", "pool.jsonl", timeout=60)  # opening it would wait for a writer forever
    message = one_line_error(refused, 3)
    assert "pool.jsonl: a FIFO (named pipe), not a file" in message
    assert not (tmp_path / "capsel.duckdb").exists()  # refused before anything was opened or created


def test_a_folder_reports_every_entry_it_does_not_read(tmp_path):
    folder = tmp_path / "pool"
    (folder / "nested").mkdir(parents=True)
    (folder / "good.jsonl").write_text('{"instruction": "q", "output": "a", "domain": "d"}\n')
    (folder / "nested" / "inside.jsonl").write_text('{"instruction": "q2", "output": "a", "domain": "d"}\n')
    os.mkfifo(folder / "pipe.jsonl")
    (folder / "dangling.jsonl").symlink_to(folder / "missing.jsonl")
    (folder / "loop.jsonl").symlink_to(folder / "loop.jsonl")
    (folder / "notes.txt").write_text("not a pool file\n")
    done = capsel(tmp_path, "ingest", "pool", timeout=60)
    assert done.returncode == 0, done.stderr
    for name in ("pipe.jsonl", "dangling.jsonl", "loop.jsonl", "nested", "notes.txt"):
        assert f"not read pool/{name}: " in done.stdout, (name, done.stdout)
    (folder / "more.jsonl").write_text('{"instruction": "q3", "output": "a", "domain": "d"}\n')
    report = ingested(tmp_path, "pool")
    assert [os.path.basename(entry["path"]) for entry in report["files"]] == ["good.jsonl", "more.jsonl"]
    reasons = {os.path.basename(entry["path"]): entry["reason"] for entry in report["skipped"]}
    assert reasons == {
        "dangling.jsonl": "a symlink to a missing file", "loop.jsonl": "a symlink loop",
        "nested": "a folder (folders inside a folder are not read)",
        "notes.txt": "not a .jsonl, .ndjson, .json, .parquet, .csv file",
        "pipe.jsonl": "a FIFO (named pipe), not a file: reading it would wait for a writer",
    }


@pytest.mark.parametrize(("make", "expected"), [
    (lambda path: path.symlink_to(path.with_name("gone.jsonl")), "a symlink to a missing file"),
    (lambda path: path.symlink_to(path), "a symlink loop"),
])
def test_a_named_broken_link_says_what_it_is(tmp_path, make, expected):
    make(tmp_path / "pool.jsonl")
    assert f"pool.jsonl: {expected}" in one_line_error(capsel(tmp_path, "ingest", "pool.jsonl"), 3)
