"""Links to published files that a browser opens: through the server of the output root, else file://."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote


def browser_link(path: Path, output_root: Path, outputs_url: str | None) -> str:
    """`<outputs_url>/<path relative to the output root>` when a server is set and the path lies in the root.

    Browsers refuse file:// links from an http page (the Prefect UI), so a served root is what makes
    them clickable; a path outside the root is not served, so it keeps its file:// form.
    """
    resolved = Path(path).expanduser().resolve()
    root = Path(output_root).expanduser().resolve()
    if outputs_url and (resolved == root or root in resolved.parents):
        relative = resolved.relative_to(root).as_posix()
        return f"{outputs_url.rstrip('/')}/{quote(relative)}"
    return resolved.as_uri()
