"""Staging folders (`.tmp-<selection_id>`): claimed by a lock while a publisher builds them, abandoned once not.

Each carries an owner file beside it (`.tmp-<selection_id>.owner.json`, outside the folder so it is never
published) naming the database and run that made it: a reconcile removes only folders its own store made.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import duckdb

from capsel.db import one_row, run_sql
from capsel.processes import process_started_at

STAGING_PREFIX = ".tmp-"
OWNER_SUFFIX = ".owner.json"
MADE_BY = "capsel publish"


def staging_dir(out_dir: Path, selection_id: str) -> Path:
    """Where a selection is built before it is renamed into `out_dir/<selection_id>`."""
    return out_dir / f"{STAGING_PREFIX}{selection_id}"


def owner_file(staging: Path) -> Path:
    """The file beside `staging` that names who made it."""
    return staging.with_name(staging.name + OWNER_SUFFIX)


def staging_owner(staging: Path) -> dict | None:
    """Who made `staging` (`database`, `run_id`, `selection_id`), or None when capsel's owner file is not there."""
    try:
        owner = json.loads(owner_file(staging).read_text())
    except (OSError, ValueError):
        return None
    return owner if isinstance(owner, dict) and owner.get("made_by") == MADE_BY else None


@contextmanager
def claimed_staging(staging: Path, database: str | None, run_id: str | None) -> Iterator[Path]:
    """Create `staging` with its owner file and hold a lock on it until the block ends; then remove whatever is
    left of both.

    The kernel drops the lock when the process dies, SIGKILL included, so a reconcile can tell a folder
    someone still builds from one a killed publisher left behind.
    """
    owner = owner_file(staging)
    # written before the folder, so a folder capsel made never lacks it
    owner.write_text(json.dumps({"made_by": MADE_BY, "database": database, "run_id": run_id,
                                 "selection_id": staging.name.removeprefix(STAGING_PREFIX)}))
    try:
        staging.mkdir()
        handle = os.open(staging, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield staging
        finally:
            os.close(handle)
            shutil.rmtree(staging, ignore_errors=True)
    finally:
        owner.unlink(missing_ok=True)


@contextmanager
def recorded_staging(con: duckdb.DuckDBPyConnection, staging: Path, run_id: str | None) -> Iterator[Path]:
    """`claimed_staging`, with a `publish_staging` row from before the folder exists until it is gone: a kill
    leaves the row, so a reconcile finds the folder whatever --out the next command names."""
    (database,) = one_row(con, "db/database_file")
    staging = staging.parent.resolve() / staging.name  # the form a reconcile finds it in
    started_at = datetime.now(timezone.utc).replace(tzinfo=None)
    run_sql(con, "publish/staging_insert", {"staging_path": str(staging), "run_id": run_id, "started_at": started_at,
                                            "selection_id": staging.name.removeprefix(STAGING_PREFIX)})
    try:
        with claimed_staging(staging, database, run_id) as folder:
            yield folder
    finally:
        try:
            run_sql(con, "publish/staging_forget", {"staging_path": str(staging)})
        except duckdb.Error:  # a connection the failure left unusable: the row waits for the next reconcile
            pass


def remove_staging(staging: Path) -> None:
    """Remove an abandoned staging folder and its owner file."""
    shutil.rmtree(staging, ignore_errors=True)
    owner_file(staging).unlink(missing_ok=True)


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
