"""Background processes for tests: each in its own session, so the whole group can be killed."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_group(args: list[str], env: dict, log: Path, cwd: Path | None = None) -> subprocess.Popen:
    """Start `args` as the leader of a new process group, output to `log`."""
    handle = open(log, "wb")
    return subprocess.Popen(args, env=env, cwd=cwd, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)


def kill_group(process: subprocess.Popen, grace_s: float = 5.0) -> None:
    """SIGTERM the process group, then SIGKILL whatever is left after `grace_s`."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            if sig == signal.SIGTERM:
                # the leader is gone; children may linger in its group
                os.killpg(process.pid, signal.SIGKILL)
            return
        except subprocess.TimeoutExpired:
            continue
        except ProcessLookupError:
            return


def wait_healthy(url: str, process: subprocess.Popen, log: Path, timeout_s: float = 90.0) -> None:
    """Poll `url` until it answers 200; fail with the log's tail if the process dies or time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"process exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise TimeoutError(f"{url} not healthy after {timeout_s}s:\n{log.read_text()[-3000:]}")
