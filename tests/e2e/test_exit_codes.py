"""`capsel` exits 0 on success, 2 on a usage error, 3 on a data or input error, 4 when the quality gate
refuses a selection and 5 when interrupted (docs/getting-started.md: Exit codes); each failure is one line on stderr."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from capsel.db import open_db
from tests.support.scored_pool import make_pool

pytestmark = pytest.mark.e2e


def environment(tmp_path):
    env = {key: value for key, value in os.environ.items() if not key.startswith("CAPSEL_")}
    return {**env, "CAPSEL_DB_PATH": str(tmp_path / "capsel.duckdb"), "COLUMNS": "200"}


def capsel(tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "capsel", *args], cwd=tmp_path, env=environment(tmp_path),
                          capture_output=True, text=True, timeout=180)


def one_clean_line(done: subprocess.CompletedProcess) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert "Traceback" not in done.stderr and lines and lines[0].startswith("error:"), done.stderr
    return " ".join(done.stderr.split())


def test_usage_errors_exit_2(tmp_path):
    open_db(tmp_path / "capsel.duckdb").close()
    assert capsel(tmp_path, "ingest", "--no-such-option").returncode == 2  # click's own usage error
    budget = capsel(tmp_path, "select", "--budget", "lots", "--out", "sels")
    assert budget.returncode == 2 and "cannot read budget 'lots'" in one_clean_line(budget)
    both = capsel(tmp_path, "ingest", "x.jsonl", "--reingest", "--sample", "5")
    assert both.returncode == 2 and "--reingest" in one_clean_line(both) and "--sample" in both.stderr
    as_json = capsel(tmp_path, "select", "--budget", "0", "--out", "sels", "--json")
    assert as_json.returncode == 2
    assert json.loads(as_json.stdout) == {"ok": False, "error": "the budget must be at least 1 candidate",
                                          "exit_code": 2}


def test_data_and_input_errors_exit_3(tmp_path):
    missing_file = capsel(tmp_path, "ingest", "nowhere.jsonl")
    assert missing_file.returncode == 3 and "nowhere.jsonl: no such file" in one_clean_line(missing_file)
    missing_db = capsel(tmp_path, "select", "--budget", "5", "--out", "sels", "--db", "typo.duckdb")
    assert missing_db.returncode == 3 and "no capsel database at typo.duckdb" in one_clean_line(missing_db)
    open_db(tmp_path / "capsel.duckdb").close()
    empty = capsel(tmp_path, "select", "--budget", "5", "--out", "sels")
    assert empty.returncode == 3 and "run `capsel score` first" in one_clean_line(empty)


def test_a_refused_selection_exits_4_and_publishes_nothing(tmp_path):
    con = open_db(tmp_path / "capsel.duckdb")
    make_pool(con, {"math": 30})
    # a blank response slipped into the store: the gate's text check must refuse the selection holding it
    con.execute("update candidates set response = '  ' where candidate_id = (select min(candidate_id) "
                "from candidates)")
    con.close()
    refused = capsel(tmp_path, "select", "--budget", "100%", "--out", "sels", "--json")
    assert refused.returncode == 4
    assert "data-quality gate failed" in one_clean_line(refused) and "nothing was published" in refused.stderr
    assert json.loads(refused.stdout)["exit_code"] == 4
    out = tmp_path / "sels"  # --out is taken as typed: relative to the working directory
    assert not list(out.glob("sel-*")) and list((out / "rejected").iterdir())
    con = duckdb.connect(str(tmp_path / "capsel.duckdb"), read_only=True)
    assert con.execute("select count(*) from selections").fetchone()[0] == 0
    con.close()


def _group_members(pgid: int) -> list[int]:
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:
            members.append(int(stat.parent.name))
    return members


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_ingest_exits_5_keeps_nothing_half_done_and_leaves_no_process(tmp_path, big_pool, sig):
    db = tmp_path / "capsel.duckdb"
    process = subprocess.Popen([sys.executable, "-m", "capsel", "ingest", str(big_pool), "--domain", "d"],
                               cwd=tmp_path, env=environment(tmp_path), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while not db.exists() and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    time.sleep(0.8)  # into the file: the database exists once the run has started writing
    process.send_signal(sig)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 5, stderr[-2000:]
    assert "interrupted" in stderr and "Traceback" not in stderr
    deadline = time.monotonic() + 10
    while _group_members(process.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _group_members(process.pid) == []  # no parse worker outlived the command
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("select count(*) from sources").fetchone()[0] == 0  # the file was rolled back whole
    assert con.execute("select count(*) from candidates").fetchone()[0] == 0
    con.close()

    again = capsel(tmp_path, "ingest", str(big_pool), "--domain", "d", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["totals"]["n_inserted"] == 600_000
