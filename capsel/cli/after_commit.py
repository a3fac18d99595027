"""Reporting work that is already committed: a failure to print it never turns a done job into a failed one."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Iterator

from capsel.cli.common import StdoutClosed
from capsel.safe_text import visible


class Commit:
    """Whether the command's work is committed yet, and what it was (one line a retry can be judged by)."""

    def __init__(self) -> None:
        self.what: str | None = None

    def done(self, what: str) -> None:
        """Mark the work committed: from here on, a failure only costs its report."""
        self.what = what


@contextmanager
def committed_work() -> Iterator[Commit]:
    """The work, then its report (JSON, progress bars closing, tables). Once `Commit.done` is called, a failure to
    report says what was committed in one plain line on stderr and the command exits as the work did.

    A scheduler retries a command that exits non-zero: had `capsel select` failed while printing its table
    (a closed pipe, an unprintable name), the retry would publish a second selection. Failures before `done`
    propagate as always, and so does Ctrl-C.
    """
    commit = Commit()
    try:
        yield commit
    # whatever broke the report once the work was done; CapselErrors meant for the user are raised outside the block
    except (Exception, StdoutClosed) as exc:  # noqa: BLE001
        if commit.what is None:
            raise
        closed = isinstance(exc, (BrokenPipeError, StdoutClosed))
        if isinstance(exc, BrokenPipeError):  # from print_json; rich handles its own (StdoutClosed)
            _drop_stdout()
        why = "stdout was closed" if closed else f"{type(exc).__name__}: {exc}"
        _say(f"{commit.what} (the rest of its report was not printed: {why})")


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
