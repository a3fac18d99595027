"""A read-only HTTP server of the output root, so artifact links open from the Prefect UI in a browser."""

from __future__ import annotations

import functools
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class OutputRootHandler(SimpleHTTPRequestHandler):
    """GET and HEAD of files under `directory` only: a symlink that leads out of the root answers 404.

    SimpleHTTPRequestHandler already refuses `..` in URLs, but it follows symlinks, and a selection
    folder may hold one (a user's, or an attacker's on a shared disk); resolving before serving keeps
    the server to what the root really contains.
    """

    def send_head(self):
        root = Path(self.directory).resolve()
        resolved = Path(self.translate_path(self.path)).resolve()
        if resolved != root and root not in resolved.parents:
            self.send_error(404, "File not found")
            return None
        return super().send_head()


def output_server(root: Path, host: str, port: int) -> ThreadingHTTPServer:
    """A server of `root` bound to host:port (port 0: a free one), not yet serving."""
    handler = functools.partial(OutputRootHandler, directory=str(Path(root).resolve()))
    return ThreadingHTTPServer((host, port), handler)


def server_url(server: ThreadingHTTPServer) -> str:
    """The base URL to set as CAPSEL_OUTPUTS_URL."""
    host, port = str(server.server_address[0]), int(server.server_address[1])
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"
