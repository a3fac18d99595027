"""A real Prefect server on 127.0.0.1 (free port, temporary PREFECT_HOME) shared by the flow tests, and a
pool big enough for ingest to parse in worker processes."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.processes import free_port, kill_group, start_group, wait_healthy
from tests.support.s3_server import s3_server  # noqa: F401 (the object-storage tests' S3 server, a session fixture)

PREFECT = str(Path(sys.executable).with_name("prefect"))


@dataclass(frozen=True)
class PrefectServer:
    """Where the test server listens and the environment that points a process at it."""

    api_url: str
    home: Path
    allowed_root: Path

    def env(self, **extra: str) -> dict:
        """os.environ (minus CAPSEL_*) pointed at this server, one thread per process, with the test session's
        temporary folder as the roots a flow run's parameters may name (`run_roots`), plus `extra`."""
        base = {key: value for key, value in os.environ.items() if not key.startswith("CAPSEL_")}
        return {
            **base, "PREFECT_API_URL": self.api_url, "PREFECT_HOME": str(self.home), "OMP_NUM_THREADS": "1",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PYTHONUNBUFFERED": "1", "COLUMNS": "200",
            **run_roots(self.allowed_root), **extra,
        }


def run_roots(root: Path) -> dict[str, str]:
    """The environment of a deployment whose runs may name anything under `root` (outputs, databases, sources,
    models): the flow tests' configs point into the session's temporary folder."""
    return {"CAPSEL_OUTPUT_ROOT": str(root), "CAPSEL_SOURCE_ROOTS": str(root), "CAPSEL_MODEL_ROOTS": str(root)}


@pytest.fixture(scope="session")
def prefect_server(tmp_path_factory):
    """Start `prefect server start` once per session; its whole process group is killed at the end."""
    home = tmp_path_factory.mktemp("prefect_home")
    port = free_port()
    server = PrefectServer(f"http://127.0.0.1:{port}/api", home, tmp_path_factory.getbasetemp())
    log = home / "server.log"
    process = start_group([PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)], server.env(), log)
    try:
        wait_healthy(f"{server.api_url}/health", process, log)
        yield server
    finally:
        kill_group(process)


@pytest.fixture()
def prefect_api(prefect_server, monkeypatch):
    """Point this test process (and Ray workers it starts) at the session's Prefect server."""
    from prefect.settings import PREFECT_API_URL, PREFECT_LOGGING_TO_API_ENABLED, temporary_settings

    monkeypatch.setenv("PREFECT_API_URL", prefect_server.api_url)
    # this process outlives the server (a session fixture): its log shipper would complain at exit
    monkeypatch.setenv("PREFECT_LOGGING_TO_API_ENABLED", "false")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    for key in [key for key in os.environ if key.startswith("CAPSEL_")]:
        monkeypatch.delenv(key)
    for key, value in run_roots(prefect_server.allowed_root).items():
        monkeypatch.setenv(key, value)
    with temporary_settings(updates={PREFECT_API_URL: prefect_server.api_url, PREFECT_LOGGING_TO_API_ENABLED: False}):
        yield prefect_server


@pytest.fixture(scope="session")
def big_pool(tmp_path_factory) -> Path:
    """About 50 MB: ingest runs for seconds, with its parallel parse workers (inputs over 32 MiB)."""
    path = tmp_path_factory.mktemp("big") / "big.jsonl"
    with open(path, "w") as handle:
        for i in range(600_000):
            handle.write(f'{{"instruction": "Question {i}: what is {i} times 3?", "response": "{3 * i}"}}\n')
    return path
