"""Fixtures of the hostile-pool tests."""

from tests.support.request_log_server import request_log  # noqa: F401 (an HTTP server that logs what reaches it)
