"""Fixtures of the hostile-pool tests."""

from tests.e2e.conftest import prefect_server  # noqa: F401 (the flow corpus runs on a real Prefect server)
from tests.support.request_log_server import request_log  # noqa: F401 (an HTTP server that logs what reaches it)
