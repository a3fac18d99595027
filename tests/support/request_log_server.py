"""An HTTP server on 127.0.0.1 that records every connection and every request it gets, and answers from a table of
routes: the witness that a hostile pool made capsel reach (or not reach) the machine's own network."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

import pytest

# path -> (status, headers, body); any other path is a 404
Routes = dict[str, tuple[int, dict[str, str], bytes]]


class RequestLogServer(ThreadingHTTPServer):
    """Counts accepted connections (an FTP client that never sends a request line still counts) and logs requests
    as (method, path with its query)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.routes: Routes = {}
        self.connections = 0
        self.requests: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    @property
    def port(self) -> int:
        return self.server_address[1]

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def verify_request(self, request, client_address) -> bool:  # type: ignore[no-untyped-def]
        with self._lock:
            self.connections += 1
        return True

    def record(self, method: str, path: str) -> None:
        with self._lock:
            self.requests.append((method, path))


class _Handler(BaseHTTPRequestHandler):
    server: RequestLogServer

    def _answer(self) -> None:
        self.server.record(self.command, self.path)
        status, headers, body = self.server.routes.get(self.path, (404, {}, b"not here"))
        self.send_response(status)
        for name, value in {"Content-Length": str(len(body)), **headers}.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = _answer

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class names it so)
        pass


@pytest.fixture
def request_log() -> Iterator[RequestLogServer]:
    """A fresh server per test, serving in a thread until the test ends."""
    server = RequestLogServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
