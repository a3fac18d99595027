"""A temporary Prefect server for flows run in this process: a child that dies with it, even by SIGKILL.

Without an API URL Prefect starts such a server itself, but as a plain subprocess: a killed flow
process leaves it running for good, holding its port. This one serves the same app (Prefect's
ephemeral server: no UI, no background services) from a child that calls `die_with_parent` first.
"""

from __future__ import annotations

import atexit
import os
import socket
import subprocess
import sys
import time

from capsel.errors import CapselError
from capsel.processes import die_with_parent

# What capsel's flows need from a Prefect server: its telemetry write races the server's own startup
# and prints a 135-line 'database is locked' traceback into the first run's output.
SERVER_ENV = {"PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
UVICORN_STARTUP_FAILURE = 3  # uvicorn's exit code when it cannot listen on its port (another process took it)
MAX_STARTS = 3
# Prefect's default wait is 20 s; a first start (it creates the server's database) took longer than that on a
# busy 2-core machine, and failing the command is worse than waiting.
MIN_STARTUP_S = 90


def use_temporary_server() -> None:
    """Point Prefect at a temporary server of our own when it would otherwise start one itself.

    Call it from the main thread: on Linux the server dies with the thread that started it. The server
    stops when this process exits (after Prefect has sent its last logs and events).
    """
    from prefect.settings import (
        PREFECT_API_URL,
        PREFECT_SERVER_EPHEMERAL_ENABLED,
        PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
    )

    if PREFECT_API_URL.value() or not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        return
    server, api_url = _start(max(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value(), MIN_STARTUP_S))
    # Stopped at exit after Prefect's last logs and events: its workers drain before atexit hooks run, and
    # hooks it registers later run before this one.
    atexit.register(_stop, server)
    os.environ["PREFECT_API_URL"] = api_url  # for child processes, and for the settings refreshed below
    os.environ.setdefault("PREFECT_UI_URL", "")  # the server has no UI: no 'View at' links to it in the log
    from prefect.context import refresh_global_settings_context

    refresh_global_settings_context()


def run_long_lived_server(host: str, port: int) -> None:
    """Become `prefect server start` (API, UI and the scheduler) with capsel's settings; never returns.

    Flow commands and workers pointed at it (PREFECT_API_URL) skip the temporary server's start.
    """
    sys.stdout.flush()  # what was printed before the exec would be lost with this process's buffers
    os.execve(sys.executable, [sys.executable, "-m", "prefect", "server", "start", "--host", host, "--port",
                               str(port)], {**os.environ, **SERVER_ENV})


def _start(timeout_s: float) -> tuple[subprocess.Popen, str]:
    for _ in range(MAX_STARTS):
        port = _free_port()
        env = {**SERVER_ENV, **os.environ}
        server = subprocess.Popen([sys.executable, "-m", __name__, str(os.getpid()), str(port)], env=env)
        api_url = f"http://127.0.0.1:{port}/api"
        if _wait_healthy(server, api_url, timeout_s):
            return server, api_url
        exit_code = server.poll()
        if exit_code == UVICORN_STARTUP_FAILURE:
            continue
        _stop(server)
        what = f"did not answer in {timeout_s:.0f} s" if exit_code is None else f"exited with code {exit_code}"
        raise CapselError(
            f"the temporary Prefect server {what}; set PREFECT_API_URL to a running server "
            "(`prefect server start`) or raise PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
        )
    raise CapselError(f"the temporary Prefect server found no free port in {MAX_STARTS} tries")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_healthy(server: subprocess.Popen, api_url: str, timeout_s: float) -> bool:
    import httpx  # only a started server is polled; `capsel flow ... --help` must not load it

    deadline = time.monotonic() + timeout_s
    with httpx.Client() as client:
        while time.monotonic() < deadline and server.poll() is None:
            try:
                if client.get(f"{api_url}/health").status_code == 200:
                    return True
            except httpx.TransportError:
                pass
            time.sleep(0.1)
    return False


def _stop(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.wait(timeout=5)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def _serve(parent_pid: int, port: int) -> None:
    """The server child: bound to its parent's life before the slow imports, then Prefect's ephemeral app."""
    die_with_parent(parent_pid)
    import uvicorn
    from prefect.server.api.server import create_app

    uvicorn.run(create_app(ephemeral=True, final=True), host="127.0.0.1", port=port, log_level="error",
                lifespan="on")


if __name__ == "__main__":
    _serve(int(sys.argv[1]), int(sys.argv[2]))
