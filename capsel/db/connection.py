"""Open the DuckDB store, creating or upgrading its schema."""

from __future__ import annotations

import re
import time
from pathlib import Path

import duckdb

from capsel.db.definitions import define
from capsel.db.migrations import check_not_newer, latest_version, migrate
from capsel.db.progress_file import RunProgress, announce_writer, read_progress
from capsel.db.sqlfiles import one_row
from capsel.db.stale_runs import interrupt_dead_runs
from capsel.errors import CapselError

_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (.*) \(PID (\d+)\)")
# A reader (`capsel status` in a second terminal, a report) holds the file for a moment and DuckDB makes a writer
# that opens meanwhile fail; a writer holds it for its whole run and says so in its progress file.
READER_WAIT_S, READER_POLL_S = 10.0, 0.05


class DatabaseLockedError(CapselError):
    """Another process writes the database; `holder_pid` is that process, `progress` what it reported."""

    def __init__(self, message: str, holder_pid: int | None, progress: RunProgress | None):
        super().__init__(message)
        self.holder_pid, self.progress = holder_pid, progress

    @property
    def holder_progress(self) -> RunProgress | None:
        """The holder's own progress: a file left by another process (a killed writer) says nothing of it."""
        return self.progress if self.progress is not None and self.progress.pid == self.holder_pid else None


def open_db(
    path: str | Path, read_only: bool = False, memory_limit: str | None = None, must_exist: bool = False
) -> duckdb.DuckDBPyConnection:
    """Connect to the store at `path` (':memory:' allowed); writers migrate, readers only check.

    A writer also marks the runs that processes of this host left 'running' when they died as 'interrupted'.

    A writer creates a missing file unless `must_exist`: work on an existing pool (scoring, selecting) must
    not answer a mistyped path with an empty new database.

    DuckDB allows one writing process per file, so workers must not call this with
    read_only=False while a writer holds the file. `memory_limit` (e.g. '1GB') caps DuckDB's
    buffer memory, which otherwise grows up to 80% of RAM; DuckDB spills to disk beyond it.
    """
    target = str(path)
    if target != ":memory:":
        file = Path(path)
        if (read_only or must_exist) and not file.exists():
            raise CapselError(f"no capsel database at {file}; run `capsel ingest` first or set [[db_path]]")
        if not read_only:
            file.parent.mkdir(parents=True, exist_ok=True)
    config: dict[str, str | bool | int | float | list[str]] = {"memory_limit": memory_limit} if memory_limit else {}
    con = _connect(target, read_only, config)
    if read_only:
        _check_readable(con, target)
        define(con, temporary=True)
    else:
        migrate(con, target)
        define(con)
        interrupt_dead_runs(con)
        if target != ":memory:":
            announce_writer(target)
    return con


def _connect(target: str, read_only: bool, config: dict) -> duckdb.DuckDBPyConnection:
    """Connect; a writer waits up to READER_WAIT_S for a holder that reports no progress (a reader, most likely)
    and fails at once on a capsel writer, which would hold the file for its whole run."""
    deadline = time.monotonic() + (0.0 if read_only else READER_WAIT_S)
    while True:
        try:
            return duckdb.connect(target, read_only=read_only, config=config)
        except duckdb.IOException as exc:
            if (holder := _LOCK_HOLDER.search(str(exc))) is None:
                raise CapselError(f"cannot open {target}: {exc}") from exc
            locked = locked_error(target, holder.group(1), int(holder.group(2)))
            if locked.holder_progress is not None or time.monotonic() >= deadline:
                raise locked from exc
        time.sleep(READER_POLL_S)


def locked_error(path: str, program: str, pid: int) -> DatabaseLockedError:
    """The error for a database that process `pid` holds, with what that process says it is doing."""
    progress = read_progress(path)
    if progress is not None and progress.pid == pid:
        doing = f"`{progress.command}`: {progress.summary()}"
    else:
        doing = f"{program}, which reports no progress"
    return DatabaseLockedError(
        f"{path} is being written by process {pid} ({doing}); DuckDB lets no other process open it until that "
        "one ends: wait for it, or stop it (Ctrl-C keeps its finished batches)", pid, progress,
    )


def _check_readable(con: duckdb.DuckDBPyConnection, path: str) -> None:
    exists = one_row(con, "db/schema_version_exists")[0]
    version = int(one_row(con, "db/schema_version_current")[0]) if exists else 0
    check_not_newer(version, path)
    if version < latest_version():
        raise CapselError(
            f"{path} has schema version {version} (current is {latest_version()}); "
            "run `capsel migrate` once to upgrade it"
        )
