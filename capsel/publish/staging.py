"""Staging folders (`.tmp-<selection_id>`): claimed by a lock while a publisher builds them, abandoned once not."""

from __future__ import annotations

import fcntl
import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from capsel.processes import process_started_at

STAGING_PREFIX = ".tmp-"


def staging_dir(out_dir: Path, selection_id: str) -> Path:
    """Where a selection is built before it is renamed into `out_dir/<selection_id>`."""
    return out_dir / f"{STAGING_PREFIX}{selection_id}"


@contextmanager
def claimed_staging(staging: Path) -> Iterator[Path]:
    """Create `staging` and hold a lock on it until the block ends; then remove whatever is left of it.

    The kernel drops the lock when the process dies, SIGKILL included, so a reconcile can tell a folder
    someone still builds from one a killed publisher left behind.
    """
    staging.mkdir()
    handle = os.open(staging, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield staging
    finally:
        os.close(handle)
        shutil.rmtree(staging, ignore_errors=True)


def is_abandoned(staging: Path) -> bool:
    """True when no live process holds `staging` and it predates this process.

    The age test covers the instant between a publisher's mkdir and its lock: a folder that old was
    locked long ago if anyone alive was building it.
    """
    try:
        handle = os.open(staging, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return os.fstat(handle).st_mtime < process_started_at()
    finally:
        os.close(handle)
