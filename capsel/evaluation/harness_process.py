"""Run lm-eval's CLI as a subprocess: both streams into one log, its tqdm progress to a callback, stdout kept."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable

from capsel.processes import die_with_parent

# The bar lm-eval's hf model draws while it generates: "Running generate_until requests:  40%|...| 2/5 [...]".
PROGRESS = re.compile(rb"Running generate_until requests:.*?(\d+)/(\d+)\s")  # the space: never a number cut short
# tqdm starts each redraw with a carriage return and ends none: split on it, and read the unfinished tail too, or
# the newest bar would wait for the next one (up to a sample's generation time).
SEGMENT_END = re.compile(rb"[\r\n]")
POLL_S = 0.2

ProgressCallback = Callable[[int, "int | None"], None]


@dataclass(frozen=True)
class Finished:
    """How the process ended: its exit status, all it printed to stdout, its last line on stderr that was no bar."""

    returncode: int
    stdout: str
    last_error: str


class _Reader(threading.Thread):
    """Copy one stream into the shared log; collect it (stdout) or read its progress bars (stderr)."""

    def __init__(self, stream: IO[bytes], log: IO[bytes], lock: threading.Lock, progress: queue.Queue | None):
        super().__init__(daemon=True)
        self.stream, self.log, self.lock, self.progress = stream, log, lock, progress
        self.collected = bytearray()
        self.last_line = b""
        self.reported: tuple[int, int] | None = None

    def run(self) -> None:
        pending = b""
        while chunk := self.stream.read1(1 << 16):  # type: ignore[attr-defined]
            with self.lock:
                self.log.write(chunk)
                self.log.flush()
            self.collected += chunk
            *segments, pending = SEGMENT_END.split(pending + chunk)
            self._read(segments + [pending], finished=False)
        self._read([pending], finished=True)

    def _read(self, segments: list[bytes], finished: bool) -> None:
        for index, segment in enumerate(segments):
            match = PROGRESS.search(segment)
            if match and self.progress is not None:
                done = (int(match.group(1)), int(match.group(2)))
                if done != self.reported:  # the tail is read again once it is complete
                    self.reported = done
                    self.progress.put(done)
            elif segment.strip() and (finished or index < len(segments) - 1):
                self.last_line = segment.strip()


def run_logged(command: list[str], *, cwd: Path, env: dict[str, str], log_path: Path,
               on_progress: ProgressCallback) -> Finished:
    """Run `command` to its end, logging both streams to `log_path` and reporting its progress in this thread."""
    progress: queue.Queue = queue.Queue()
    lock = threading.Lock()
    with log_path.open("wb") as log:
        log.write(f"$ {' '.join(command)}\n".encode())
        # its own session, so that ending it (an interrupted caller) ends the workers it started too
        parent = os.getpid()
        process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, start_new_session=True,
                                   preexec_fn=lambda: die_with_parent(parent))  # a killed capsel takes it along
        assert process.stdout is not None and process.stderr is not None
        readers = [_Reader(process.stdout, log, lock, None), _Reader(process.stderr, log, lock, progress)]
        for reader in readers:
            reader.start()
        try:
            on_progress(0, None)
            # the callback runs here, in the caller's thread, never in a reader's
            while any(reader.is_alive() for reader in readers) or not progress.empty():
                try:
                    on_progress(*progress.get(timeout=POLL_S))
                except queue.Empty:
                    pass
            returncode = process.wait()
        except BaseException:
            _end(process)
            raise
    stdout, stderr = readers
    return Finished(returncode, stdout.collected.decode(errors="replace"),
                    stderr.last_line.decode(errors="replace"))


def _end(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        pass
