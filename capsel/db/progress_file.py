"""What the process writing a database is doing, in a small JSON file beside it that other processes can read.

DuckDB lets no other process open a file while one writes it, not even read-only, so `capsel status`
cannot ask the database how a long score or ingest is getting on. The writer therefore keeps
`<db>.progress.json` up to date: its pid and host, its command, the current stage and its count, rate
and ETA. Only one process can hold the write lock, and it rewrites the file when it opens the database,
so while the lock is held the file is the holder's. The file is replaced whole (write, then rename), so
a reader never sees half of it.
"""

from __future__ import annotations

import atexit
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import orjson

from capsel.processes import pid_alive, this_host

# Often enough to look live in `capsel status`, rarely enough to cost nothing next to a batch.
WRITE_INTERVAL_S = 0.5


def progress_path(db_path: str | Path) -> Path:
    """The progress file of the database at `db_path`."""
    return Path(f"{db_path}.progress.json")


@dataclass
class RunProgress:
    """One writer's progress: who it is, and how far the current stage has got."""

    pid: int
    host: str
    command: str
    started_at: float
    stage: str = "starting"
    run_id: str | None = None
    unit: str = "candidates"
    done: int = 0
    total: int | None = None
    stage_started_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)

    @property
    def rate(self) -> float | None:
        """Units per second since the stage started."""
        elapsed = self.updated_at - self.stage_started_at
        return self.done / elapsed if self.done and elapsed > 0 else None

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the current rate, when the total is known."""
        rate = self.rate
        if self.total is None or not rate:
            return None
        return max(self.total - self.done, 0) / rate

    def as_dict(self) -> dict:
        """The file's content, with the rate and ETA worked out for readers."""
        return {**asdict(self), "rate": self.rate, "eta_s": self.eta_s}

    def summary(self) -> str:
        """One line: the stage, how far it got, the rate and ETA, and how fresh that is."""
        count = f"{self.done:,}" if self.total is None else f"{self.done:,}/{self.total:,}"
        parts = [f"{self.stage} {count} {self.unit}"]
        if self.total:
            parts[0] += f" ({100 * self.done / self.total:.0f}%)"
        if (rate := self.rate) is not None:
            parts.append(f"{rate:,.1f} {self.unit}/s")
        if (eta := self.eta_s) is not None:
            parts.append(f"ETA {_duration(eta)}")
        parts.append(f"updated {_duration(max(time.time() - self.updated_at, 0))} ago")
        return ", ".join(parts)

    def is_alive(self) -> bool:
        """Whether the writer is still running (a pid of another host cannot be checked, so counts as alive)."""
        return self.host != this_host() or pid_alive(self.pid)


class ProgressFile:
    """The writer's side: the file of one database this process holds open for writing."""

    def __init__(self, db_path: str | Path):
        self.path = progress_path(db_path)
        now = time.time()
        self.progress = RunProgress(os.getpid(), this_host(), _job or " ".join(["capsel", *sys.argv[1:]]), now)
        self.written_at = 0.0
        self.write(force=True)

    def stage(self, name: str, run_id: str | None = None, unit: str = "candidates") -> None:
        """A new stage begins, its size not yet known."""
        progress = self.progress
        progress.stage, progress.run_id, progress.unit = name, run_id, unit
        progress.done, progress.total, progress.stage_started_at = 0, None, time.time()
        self.write(force=True)

    def update(self, done: int | None = None, total: int | None = None, advance: int = 0) -> None:
        """Set the stage's size or count (or move the count on), written at most every WRITE_INTERVAL_S."""
        progress = self.progress
        if total is not None:
            progress.total = total
        progress.done = (progress.done if done is None else done) + advance
        # a stage's last count is always written, so a reader never sees a finished stage short of its total
        self.write(force=total is not None or (progress.total is not None and progress.done >= progress.total))

    def write(self, force: bool = False) -> None:
        """Replace the file whole; a failure to write it never stops the work it describes."""
        now = time.time()
        if not force and now - self.written_at < WRITE_INTERVAL_S:
            return
        self.progress.updated_at, self.written_at = now, now
        staging = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        try:
            staging.write_bytes(orjson.dumps(self.progress.as_dict()))
            os.replace(staging, self.path)
        except OSError:
            staging.unlink(missing_ok=True)

    def remove(self) -> None:
        """Remove the file if it is still this process's."""
        held = _read(self.path)
        if held is not None and held.pid == os.getpid() and held.host == this_host():
            self.path.unlink(missing_ok=True)


_current: ProgressFile | None = None
# What this process is, for readers of its progress, when its command line does not say (a Prefect flow run
# started by a worker or a served deployment runs under the worker's own command).
_job: str | None = None


def name_job(job: str) -> None:
    """Name what this process is doing, in place of its command line, in every progress file it writes."""
    global _job
    _job = job
    if _current is not None:
        _current.progress.command = job
        _current.write(force=True)


def announce_writer(db_path: str | Path) -> None:
    """This process now writes the database at `db_path`: its progress goes to that database's file."""
    global _current
    if _current is None:
        atexit.register(_remove_current)
    _current = ProgressFile(db_path)


def report_stage(name: str, run_id: str | None = None, unit: str = "candidates") -> None:
    """A stage of the current writer begins (no-op in a process that writes no database file)."""
    if _current is not None:
        _current.stage(name, run_id, unit)


def report_progress(done: int | None = None, total: int | None = None, advance: int = 0) -> None:
    """The current stage's size or count moved on (no-op in a process that writes no database file)."""
    if _current is not None:
        _current.update(done, total, advance)


def read_progress(db_path: str | Path) -> RunProgress | None:
    """The progress a writer of `db_path` left, or None when there is no readable file."""
    return _read(progress_path(db_path))


def _read(path: Path) -> RunProgress | None:
    try:
        record = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    record.pop("rate", None)
    record.pop("eta_s", None)
    try:
        return RunProgress(**record)
    except TypeError:  # written by another capsel version
        return None


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds // 60:.0f} min {seconds % 60:.0f} s"
    return f"{seconds // 3600:.0f} h {seconds % 3600 // 60:.0f} min"


def _remove_current() -> None:
    if _current is not None:
        _current.remove()
