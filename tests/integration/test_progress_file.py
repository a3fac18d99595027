"""The writer's progress file, and the error a second process gets while a writer holds the database."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from capsel.db import open_db
from capsel.db.connection import DatabaseLockedError
from capsel.db.progress_file import RunProgress, progress_path, read_progress

HOLD = """
import sys, time
{body}
print("ready", flush=True)
time.sleep(120)
"""


def holding(db, body: str) -> subprocess.Popen:
    """A process that runs `body` (which opens `db` for writing) and then keeps it open."""
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    process = subprocess.Popen([sys.executable, "-c", HOLD.format(body=textwrap.dedent(body))], env=env,
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "ready"
    return process


WRITER_SLEEP_S, CLOCK_STEP_S = 1.6, 0.01


def test_a_capsel_writer_is_named_with_its_stage_count_rate_and_eta(tmp_path):
    db = tmp_path / "capsel.duckdb"
    launched = time.time()
    writer = holding(db, f"""
        from capsel.db import open_db
        from capsel.db.progress_file import report_progress, report_stage
        con = open_db({str(db)!r})
        report_stage("score", "run1")
        report_progress(done=0, total=400)
        time.sleep(1.0)
        report_progress(advance=100)
        time.sleep(0.6)
        report_progress(advance=20)  # written: half a second has passed since the last write
    """)
    try:
        with pytest.raises(DatabaseLockedError) as raised:
            open_db(db, read_only=True)
        locked = raised.value
        assert locked.holder_pid == writer.pid and locked.progress.pid == writer.pid
        progress = locked.progress
        assert (progress.stage, progress.run_id, progress.done, progress.total) == ("score", "run1", 120, 400)
        elapsed = progress.updated_at - progress.stage_started_at
        # the writer slept 1.6 s between its stage and its last write, all within this test's wait;
        # the wall clock may step back a little between the writer's two readings
        assert elapsed >= WRITER_SLEEP_S - CLOCK_STEP_S
        assert elapsed <= time.time() - launched
        assert progress.rate == pytest.approx(120 / elapsed)
        assert progress.eta_s == pytest.approx(280 / (120 / elapsed))
        message = str(locked)
        assert f"is being written by process {writer.pid}" in message and "score 120/400 candidates (30%)" in message
    finally:
        writer.kill()
        writer.wait()
    # the killed writer's file is left behind; it is not trusted without the lock, and the next writer replaces it
    assert read_progress(db).pid == writer.pid
    open_db(db).close()
    assert read_progress(db).pid == os.getpid()


def test_a_lock_held_by_another_program_says_it_reports_no_progress(tmp_path):
    db = tmp_path / "plain.duckdb"
    other = holding(db, f"import duckdb; con = duckdb.connect({str(db)!r})")
    try:
        with pytest.raises(DatabaseLockedError, match=f"process {other.pid} .*which reports no progress"):
            open_db(db, read_only=True)
    finally:
        other.kill()
        other.wait()


def test_rate_and_eta_are_counts_over_the_stage_time():
    progress = RunProgress(pid=1, host="h", command="capsel score", started_at=0.0, stage="score", done=50,
                           total=150, stage_started_at=100.0, updated_at=110.0)
    assert progress.rate == 5.0 and progress.eta_s == 20.0
    assert RunProgress(pid=1, host="h", command="c", started_at=0.0, done=0, total=10).eta_s is None
    assert progress_path("/x/capsel.duckdb") == Path("/x/capsel.duckdb.progress.json")


def test_a_named_job_replaces_the_command_line_and_a_stages_last_count_is_always_written(tmp_path):
    db = tmp_path / "capsel.duckdb"
    writer = holding(db, f"""
        from capsel.db import open_db
        from capsel.db.progress_file import name_job, report_progress, report_stage
        con = open_db({str(db)!r})
        name_job("flow capsel-select run brave-otter")
        report_stage("ingest pool.jsonl", "run1", unit="bytes")
        report_progress(total=500)
        report_progress(done=100)  # within half a second of the last write: kept back
        report_progress(done=500)  # the stage's last count: written at once all the same
    """)
    try:
        progress = read_progress(db)
        assert progress.pid == writer.pid
        assert progress.command == "flow capsel-select run brave-otter"
        assert (progress.stage, progress.done, progress.total) == ("ingest pool.jsonl", 500, 500)
    finally:
        writer.kill()
        writer.wait()


def test_a_writer_waits_for_a_reader_that_lets_go_and_not_for_one_that_stays(tmp_path, monkeypatch):
    """`capsel status` in a second terminal holds the file for a moment: a `capsel score` starting then must not
    fail on it (it did in CI, exit 3), while a holder that stays is still named."""
    db = tmp_path / "capsel.duckdb"
    open_db(db).close()
    brief = holding(db, f"""
        import threading, duckdb
        con = duckdb.connect({str(db)!r}, read_only=True)
        threading.Timer(1.0, con.close).start()  # lets go a second after it says it is ready
    """)
    try:
        started = time.monotonic()
        open_db(db).close()  # without the wait this raised at once: the reader held the file for a second more
        assert time.monotonic() - started < 10.0  # within the writer's wait (READER_WAIT_S)
    finally:
        brief.kill()
        brief.wait()
    monkeypatch.setattr("capsel.db.connection.READER_WAIT_S", 1.0)
    staying = holding(db, f"import duckdb; con = duckdb.connect({str(db)!r}, read_only=True)")
    try:
        started = time.monotonic()
        with pytest.raises(DatabaseLockedError, match=f"process {staying.pid} .*which reports no progress"):
            open_db(db)
        assert time.monotonic() - started >= 1.0
    finally:
        staying.kill()
        staying.wait()
