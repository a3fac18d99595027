"""kill -9 leaves nothing running: ingest's parse workers and the temporary Prefect server die with the
command, the next ingest removes the scratch a killed one left, and the next writer marks the killed run
'interrupted' (docs/getting-started.md: Interrupted and killed runs)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import orjson
import psutil
import pytest

from capsel.db import open_db
from capsel.processes import pid_alive
from capsel.runs import start_run
from tests.support.flow_pool import flow_config, tiny_flow_model, write_pool_file

pytestmark = pytest.mark.e2e
BIG_POOL_TOTALS = {"n_read": 600_000, "n_inserted": 600_000, "n_duplicates": 0, "n_quarantined": 0}


def environment(tmp_path: Path, **extra: str) -> dict:
    """This environment without capsel's settings or a Prefect server to point at."""
    base = {key: value for key, value in os.environ.items()
            if not key.startswith("CAPSEL_") and key != "PREFECT_API_URL"}
    return {**base, "CAPSEL_DB_PATH": str(tmp_path / "capsel.duckdb"), "COLUMNS": "200", **extra}


def capsel(tmp_path: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "capsel", *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)


def start_capsel(tmp_path: Path, env: dict, *args: str) -> subprocess.Popen:
    log = open(tmp_path / "killed.log", "wb")
    return subprocess.Popen([sys.executable, "-m", "capsel", *args], cwd=tmp_path, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)


def wait_for(condition, what: str, process: subprocess.Popen, timeout_s: float = 120.0):
    """The first truthy value of `condition()`; fails if `process` ends first or time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert process.poll() is None, f"ended (code {process.returncode}) before {what}"
        if value := condition():
            return value
        time.sleep(0.05)
    raise AssertionError(f"no {what} after {timeout_s} s")


def descendants(pid: int) -> list[int]:
    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def group_members(pgid: int) -> list[int]:
    """Live processes of process group `pgid` (zombies, dead but not yet reaped, are not)."""
    members = []
    for process in psutil.process_iter():
        try:
            if os.getpgid(process.pid) == pgid and pid_alive(process.pid):
                members.append(process.pid)
        except (ProcessLookupError, psutil.NoSuchProcess):
            continue
    return members


def seconds_until(condition, timeout_s: float = 15.0) -> float:
    started = time.monotonic()
    while not condition() and time.monotonic() - started < timeout_s:
        time.sleep(0.02)
    return time.monotonic() - started


def seconds_until_gone(pids: list[int]) -> float:
    return seconds_until(lambda: not any(pid_alive(pid) for pid in pids))


def kill_leftovers(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_a_sigkilled_ingest_leaves_no_worker_and_its_rerun_cleans_up_and_counts_the_same(tmp_path, big_pool):
    scratch_root = tmp_path / "tmp"  # the system temp dir of both runs
    scratch_root.mkdir()
    env = environment(tmp_path, TMPDIR=str(scratch_root))
    process = start_capsel(tmp_path, env, "ingest", str(big_pool), "--domain", "d")
    workers: list[int] = []
    try:
        # the workers are up and the scratch folder is there: parsing is under way
        wait_for(lambda: len(descendants(process.pid)) >= 2 and any(scratch_root.iterdir()), "parse workers",
                 process)
        time.sleep(1.0)
        workers = descendants(process.pid)  # the two spawn workers and multiprocessing's resource tracker
        assert len(workers) >= 2
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        assert seconds_until_gone(workers) < 5, "a parse worker outlived the killed ingest"
        assert group_members(process.pid) == []
    finally:
        kill_leftovers(workers)
    [stale] = scratch_root.iterdir()
    assert stale.name.startswith(f"capsel-ingest-{process.pid}-")

    again = capsel(tmp_path, env, "ingest", str(big_pool), "--domain", "d", "--json")
    assert again.returncode == 0, again.stderr
    assert list(scratch_root.iterdir()) == []
    totals = json.loads(again.stdout)["totals"]
    assert {key: totals[key] for key in BIG_POOL_TOTALS} == BIG_POOL_TOTALS
    assert "marked 1 run of a dead process as interrupted" in again.stderr
    con = duckdb.connect(str(tmp_path / "capsel.duckdb"), read_only=True)
    runs = con.execute("select pid, status from runs where kind = 'ingest' order by started_at").fetchall()
    con.close()
    assert runs[0] == (process.pid, "interrupted") and runs[1][1] == "completed"


def _listening_port(pids: list[int]) -> tuple[int, int] | None:
    """(pid, port) of the first of `pids` that listens on a TCP port."""
    for pid in pids:
        try:
            for connection in psutil.Process(pid).net_connections(kind="tcp"):
                if connection.status == psutil.CONN_LISTEN:
                    return pid, connection.laddr.port
        except psutil.NoSuchProcess:
            continue
    return None


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def test_a_sigkilled_flow_leaves_no_prefect_server_and_frees_its_port(tmp_path):
    model = tiny_flow_model(tmp_path / "model")
    source = write_pool_file(tmp_path / "in" / "pool.jsonl", 20, seed=5)
    config_file = tmp_path / "flow.json"
    config_file.write_bytes(orjson.dumps(flow_config(tmp_path / "run", model, [str(source)]).record()))
    # no PREFECT_API_URL: the flow runs in the command's process and records it on a temporary server
    env = environment(tmp_path, PREFECT_HOME=str(tmp_path / "prefect_home"), OMP_NUM_THREADS="1")
    process = start_capsel(tmp_path, env, "flow", "select", "--config", str(config_file))
    children: list[int] = []
    try:
        server, port = wait_for(lambda: _listening_port(descendants(process.pid)), "temporary server", process)
        wait_for(lambda: _answers(port), "answer from the server", process)
        children = descendants(process.pid)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        assert seconds_until_gone([server]) < 5, "the temporary Prefect server outlived the flow process"
        assert seconds_until_gone(children) < 5
    finally:
        kill_leftovers(children)
    # A killed process's threads close its files after its pid already reads as dead, so the port is given a
    # moment; a new server can then listen on it (uvicorn sets SO_REUSEADDR too).
    assert seconds_until(lambda: _can_listen(port)) < 5, f"port {port} still taken: {_holders(port)}"


def _can_listen(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen()
        except OSError:
            return False
        return True


def _holders(port: int) -> list[str]:
    """Who listens on `port`, to say why it is still taken."""
    holders = []
    for connection in psutil.net_connections(kind="tcp"):
        if connection.laddr and connection.laddr.port == port and connection.status == psutil.CONN_LISTEN:
            try:
                holders.append(" ".join(psutil.Process(connection.pid).cmdline()) if connection.pid else "?")
            except psutil.NoSuchProcess:
                holders.append(f"pid {connection.pid} (gone)")
    return holders


def _dead_pid() -> int:
    finished = subprocess.Popen(["true"])
    finished.wait()
    return finished.pid


def test_a_writer_marks_runs_of_dead_processes_of_this_host_interrupted_and_no_other(tmp_path):
    db = tmp_path / "capsel.duckdb"
    con = open_db(db)
    runs = {name: start_run(con, "score") for name in ("dead", "live", "other_host", "before_005")}
    # "live" keeps what start_run recorded: this test's own pid on this host
    con.execute("update runs set pid = ? where run_id = ?", [_dead_pid(), runs["dead"]])
    con.execute("update runs set pid = ?, host = 'another-host' where run_id = ?", [_dead_pid(), runs["other_host"]])
    con.execute("update runs set pid = null, host = null where run_id = ?", [runs["before_005"]])
    con.close()
    env = environment(tmp_path)

    def statuses() -> dict[str, str]:
        con = duckdb.connect(str(db), read_only=True)
        by_id = dict(con.execute("select run_id, status from runs").fetchall())
        con.close()
        return {name: by_id[run_id] for name, run_id in runs.items()}

    reader = capsel(tmp_path, env, "status")
    assert reader.returncode == 0, reader.stderr
    assert set(statuses().values()) == {"running"}  # a reader changes nothing

    (tmp_path / "pool.jsonl").write_text('{"instruction": "q", "response": "a"}\n')
    writer = capsel(tmp_path, env, "ingest", "pool.jsonl", "--domain", "d", "--json")
    assert writer.returncode == 0, writer.stderr
    assert json.loads(writer.stdout)["ok"]  # the note goes to stderr, once
    assert writer.stderr.count("marked 1 run of a dead process as interrupted") == 1
    assert statuses() == {"dead": "interrupted", "live": "running", "other_host": "running",
                          "before_005": "running"}

    again = capsel(tmp_path, env, "migrate")
    assert again.returncode == 0 and "marked" not in again.stderr
