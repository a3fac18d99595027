"""`capsel serve`: the output root over HTTP, read-only, for the links of the flows' Prefect artifacts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from capsel.cli.common import console, settings_for
from capsel.cli.wrapping import print_unbroken
from capsel.errors import CapselError
from capsel.output_server import output_server, server_url
from capsel.terminal_text import markup


def serve(
    root: Annotated[Optional[Path], typer.Option(
        "--root", help="Folder to serve (default: CAPSEL_OUTPUT_ROOT).")] = None,
    host: Annotated[str, typer.Option(
        "--host", help="Address to bind; the default keeps the server to this machine.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port (0: any free one).")] = 8765,
) -> None:
    """Serve the output root read-only over HTTP, so artifact links in the Prefect UI open in a browser."""
    folder = (root or settings_for().output_root).expanduser().resolve()
    if not folder.is_dir():
        raise CapselError(f"nothing to serve: {folder} is not a folder (run a flow first, or pass --root)")
    try:
        server = output_server(folder, host, port)
    except OSError as exc:
        raise CapselError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    url = server_url(server)
    print_unbroken(console, markup("serving {} read-only at {} (Ctrl-C stops it)", folder, url))
    print_unbroken(console, f"set CAPSEL_OUTPUTS_URL={url} for the flows' artifact links to point here")
    with server:
        try:
            server.serve_forever()
        except KeyboardInterrupt:  # the way to stop a server: not a failure, nothing is left half done
            console.print("stopped")
