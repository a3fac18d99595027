"""The ingest, status and demo commands as a user types them."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from capsel.cli.main import app
from tests.support.capsel_cli import run_capsel

pytestmark = pytest.mark.e2e


def test_ingest_then_status_then_noop_reingest(tmp_path):
    rows = [{"problem": "What is 1+1?", "solution": "2"}, {"problem": "WHAT IS 1+1?", "solution": "two"},
            {"problem": "", "solution": "x"}]
    (tmp_path / "pool.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\nnot json\n")
    args = ["ingest", "pool.jsonl", "--domain", "math", "--map", "instruction=problem,response=solution",
            "--db", "pool.duckdb"]
    first = run_capsel(tmp_path, *args)
    assert first.returncode == 0, first.stderr
    assert "read = inserted + duplicates + quarantined" in first.stdout
    math_row = next(line for line in first.stdout.splitlines() if line.strip().startswith("math"))
    assert math_row.split()[1:] == ["4", "1", "1", "2"]
    assert re.search(r"^4 rows in [0-9.]+ s \([0-9,]+ rows/s\)$", first.stdout, re.MULTILINE)
    status = run_capsel(tmp_path, "status", "--db", "pool.duckdb")
    assert status.returncode == 0, status.stderr
    assert next(line for line in status.stdout.splitlines() if line.startswith("math")).split()[1:4] == ["1", "1", "2"]
    again = run_capsel(tmp_path, *args)
    assert again.returncode == 0
    assert "skipped" in again.stdout and "already ingested" in again.stdout


def test_bad_path_is_one_clear_line_and_creates_nothing(tmp_path):
    result = run_capsel(tmp_path, "ingest", "missing.jsonl", "--db", "pool.duckdb")
    assert result.returncode == 3  # an input error
    assert result.stderr.strip() == "error: missing.jsonl: no such file"
    assert not (tmp_path / "pool.duckdb").exists()
    bad_map = run_capsel(tmp_path, "ingest", "missing.jsonl", "--map", "prompt=question")
    assert bad_map.returncode == 2 and "unknown capsel field 'prompt'" in bad_map.stderr


@pytest.mark.parametrize("command", ["ingest", "status", "demo"])
def test_every_command_has_help(command):
    result = CliRunner().invoke(app, [command, "--help"])
    assert result.exit_code == 0
    assert "Usage" in result.output
