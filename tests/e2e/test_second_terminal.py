"""While `capsel score` holds the database, a second terminal sees its progress with `capsel status`, and a second
writer fails at once, naming the holder, before it reads any model file (issue 19, finding 5)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from capsel.db.progress_file import progress_path
from tests.support.flow_pool import tiny_flow_model, write_pool_file

pytestmark = pytest.mark.e2e
N_PER_DOMAIN = 300  # two domains: long enough with one candidate per batch to be watched mid-run


def environment(tmp_path) -> dict:
    env = {key: value for key, value in os.environ.items() if not key.startswith("CAPSEL_")}
    return {**env, "CAPSEL_DB_PATH": str(tmp_path / "capsel.duckdb"), "COLUMNS": "200", "OMP_NUM_THREADS": "1"}


def capsel(tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "capsel", *args], cwd=tmp_path, env=environment(tmp_path),
                          capture_output=True, text=True, timeout=300)


def score_args(model) -> list[str]:
    return ["score", "--model", str(model), "--device", "cpu", "--batch-size", "1", "--threads", "1",
            "--horizon", "12"]


def test_status_reads_a_running_score_and_a_second_writer_fails_before_its_model(tmp_path):
    write_pool_file(tmp_path / "pool.jsonl", N_PER_DOMAIN, seed=1)
    assert capsel(tmp_path, "ingest", "pool.jsonl").returncode == 0
    model = tiny_flow_model(tmp_path / "model")
    log = open(tmp_path / "score.log", "wb")
    first = subprocess.Popen([sys.executable, "-m", "capsel", *score_args(model)], cwd=tmp_path,
                             env=environment(tmp_path), stdout=log, stderr=subprocess.STDOUT)
    try:
        seen = []
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and first.poll() is None:
            watched = capsel(tmp_path, "status", "--json")
            assert watched.returncode == 0, watched.stderr
            report = json.loads(watched.stdout)
            progress = (report.get("held_by") or {}).get("progress")
            if progress and progress["stage"] == "score" and 0 < progress["done"] < progress["total"]:
                seen.append(report["held_by"])
                if seen[-1]["progress"]["done"] > seen[0]["progress"]["done"]:  # seen moving
                    break
        assert len(seen) >= 2, f"no moving mid-run progress seen; score ended with {first.poll()}"
        earlier, later = seen[0], seen[-1]
        assert earlier["pid"] == later["pid"] == first.pid
        assert later["progress"]["command"].startswith("capsel score --model")
        assert later["progress"]["total"] == 2 * N_PER_DOMAIN
        assert later["progress"]["done"] > earlier["progress"]["done"]
        assert later["progress"]["rate"] > 0 and later["progress"]["eta_s"] > 0

        readable = capsel(tmp_path, "status")
        assert f"is being written by process {first.pid}" in readable.stdout
        assert "score " in readable.stdout and "ETA" in readable.stdout

        second = capsel(tmp_path, *score_args(model))
        assert second.returncode == 3, second.stderr
        [error] = [line for line in second.stderr.splitlines() if line.startswith("error: ")]
        assert f"is being written by process {first.pid}" in error and "`capsel score --model" in error
        assert "fingerprint" not in second.stdout  # failed before hashing or loading the model
        first.send_signal(signal.SIGINT)  # as Ctrl-C: enough has been seen
        assert first.wait(timeout=120) == 5
    finally:
        if first.poll() is None:
            first.kill()
        log.close()

    done = capsel(tmp_path, "status", "--json")
    report = json.loads(done.stdout)
    assert "held_by" not in report and report["domains"]
    assert not progress_path(tmp_path / "capsel.duckdb").exists()  # removed when the writer ended

