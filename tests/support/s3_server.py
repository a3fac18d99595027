"""A real S3-compatible server (moto's) on 127.0.0.1, and the environment that points capsel's processes at it."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from moto.server import ThreadedMotoServer

# Distinctive, so a test can search every output, log and database row for it.
SECRET = "capsel-test-secret-9f3b1c7e5a"


@dataclass(frozen=True)
class S3Server:
    """Where the server listens; credentials reach capsel only through the environment."""

    endpoint: str

    def env(self, **extra: str) -> dict:
        """os.environ (minus CAPSEL_* and any AWS_*) with this server's endpoint and test credentials, plus `extra`."""
        base = {key: value for key, value in os.environ.items()
                if not key.startswith(("CAPSEL_", "AWS_", "FSSPEC_"))}
        return {**base, "AWS_ACCESS_KEY_ID": "capsel-test-key", "AWS_SECRET_ACCESS_KEY": SECRET,
                "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": self.endpoint, "COLUMNS": "250", **extra}


def start_s3_server() -> tuple[ThreadedMotoServer, S3Server]:
    """moto's S3 server in a thread of this process, on a free port of 127.0.0.1."""
    from moto.server import ThreadedMotoServer  # imported here: every e2e module loads this file through conftest

    quiet_requests()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    return server, S3Server(f"http://{host}:{port}")


def quiet_requests() -> None:
    """Keep the server's per-request lines out of the test output."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)


@pytest.fixture(scope="session")
def s3_server():
    """moto's S3 server for the session (import this fixture into a test module to use it)."""
    server, s3 = start_s3_server()
    try:
        yield s3
    finally:
        server.stop()


def s3_filesystem(s3: S3Server):
    """An s3fs filesystem on the test server, for setting up buckets and reading back what capsel wrote."""
    import s3fs

    return s3fs.S3FileSystem(key="capsel-test-key", secret=SECRET, client_kwargs={"endpoint_url": s3.endpoint},
                             skip_instance_cache=True)
