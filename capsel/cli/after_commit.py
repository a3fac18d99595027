"""Reporting work that is already committed: a failure to print it never turns a done job into a failed one."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Iterator

from capsel.safe_text import visible


@contextmanager
def after_commit(done: str) -> Iterator[None]:
    """Print (or emit as JSON) the result of committed work; should that fail, say `done` in one plain line
    on stderr and carry on, so the command still exits with the committed outcome's code.

    A scheduler retries a command that exits non-zero: had `capsel select` failed while printing its table
    (a closed pipe, an unprintable name), the retry would publish a second selection.
    """
    try:
        yield
    except Exception as exc:  # noqa: BLE001 (whatever broke the printing; CapselErrors are raised outside it)
        if isinstance(exc, BrokenPipeError):
            _drop_stdout()
        _say(f"{done} (printing the rest of its report failed: {type(exc).__name__}: {exc})")


def _say(line: str) -> None:
    stream = sys.stderr
    encoding = getattr(stream, "encoding", None) or "utf-8"
    # one plain line, no rich: whatever broke the console must not break this one too
    text = visible(line).encode(encoding, "backslashreplace").decode(encoding)
    try:
        stream.write(text + "\n")
        stream.flush()
    except (OSError, ValueError):
        pass


def _drop_stdout() -> None:
    # the reader is gone: what is still buffered for it would fail again when Python flushes stdout at exit
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
