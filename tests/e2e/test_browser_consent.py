"""`make test` installs Chromium only with consent: on a terminal it asks (what, how big, how to skip); with no
terminal it goes ahead and says so; declined, the browser tests are skipped and the summary says they did not run.

apt-get is replaced by a stand-in that records its call, and PATH holds no Chromium, so nothing is installed here.
"""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "infra" / "setup-browser.sh"
pytestmark = pytest.mark.e2e


@pytest.fixture
def bare_path(tmp_path) -> tuple[dict, Path]:
    """An environment whose PATH has what the script runs, apt-get as a recording stand-in, and no Chromium."""
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("bash", "id", "env", "sudo"):
        if found := shutil.which(name):
            (tools / name).symlink_to(found)
    calls = tmp_path / "apt-calls"
    (tools / "apt-get").write_text(f"#!/bin/sh\necho \"$@\" >> {calls}\n")
    (tools / "apt-get").chmod(0o755)
    env = {"PATH": str(tools), "HOME": str(tmp_path)}
    return env, calls


def _on_a_terminal(env: dict, answer: bytes) -> tuple[int, str]:
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(shutil.which("bash") or "/bin/bash", ["bash", str(SCRIPT)], env)
    output = b""
    os.write(fd, answer)
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        output += chunk
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), output.decode(errors="replace")


def test_on_a_terminal_it_asks_and_a_no_installs_nothing(bare_path):
    env, calls = bare_path
    code, said = _on_a_terminal(env, b"n\n")
    assert code == 10 and "about 460 MB" in said and "SKIP_BROWSER=1" in said and "[y/N]" in said
    assert "not installed" in said and not calls.exists()


def test_on_a_terminal_a_yes_installs(bare_path):
    env, calls = bare_path
    code, _ = _on_a_terminal(env, b"y\n")
    assert code == 0 and "install -y chromium" in calls.read_text()


def test_without_a_terminal_it_installs_and_says_so(bare_path):
    env, calls = bare_path
    done = subprocess.run(["bash", str(SCRIPT)], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    assert done.returncode == 0 and "no terminal to ask on" in done.stdout and "about 460 MB" in done.stdout
    assert "install -y chromium" in calls.read_text()


def test_skip_browser_skips_and_the_summary_says_the_browser_tests_did_not_run(bare_path, tmp_path):
    env, calls = bare_path
    done = subprocess.run(["bash", str(SCRIPT)], env={**env, "SKIP_BROWSER": "1"}, capture_output=True, text=True)
    assert done.returncode == 10 and not calls.exists()
    suite = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "browser",
         "tests/integration/test_gate.py"], cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PATH": env["PATH"], "CAPSEL_SKIP_BROWSER": "1"})
    assert suite.returncode == 0, suite.stdout[-2000:]
    assert "2 skipped" in suite.stdout
    assert "browser tests NOT run: 2 need Chromium" in suite.stdout
