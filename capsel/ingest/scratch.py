"""Scratch folders for parse workers' chunk files, named after the process that owns them.

A killed ingest cannot remove its folder, so the next ingest removes every folder whose owner, a
process of this host, is no longer alive (a live owner's folder is never touched).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from capsel.processes import pid_alive, this_host

PREFIX = "capsel-ingest-"
# <prefix><pid>-<host label>-<mkdtemp's random suffix, which holds no '-'>
_OWNED = re.compile(rf"^{PREFIX}(?P<pid>\d+)-(?P<host>[A-Za-z0-9._]+)-[A-Za-z0-9_]+$")


def _host_label() -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "_", this_host())


@contextmanager
def scratch_folder(root: str | Path | None = None) -> Iterator[str]:
    """A new folder under `root` (default: the temp dir) named after this process, removed on the way out."""
    path = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-{_host_label()}-", dir=root)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def remove_stale_scratch(root: str | Path | None = None) -> list[Path]:
    """Remove the scratch folders under `root` (default: the temp dir) whose owner on this host is dead."""
    removed = []
    host = _host_label()
    for path in Path(root or tempfile.gettempdir()).glob(f"{PREFIX}*"):
        owner = _OWNED.match(path.name)
        if owner is None or path.is_symlink() or not path.is_dir():
            continue
        if owner["host"] != host or pid_alive(int(owner["pid"])):
            continue
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            removed.append(path)
    return removed
