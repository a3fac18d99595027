"""User-facing errors: the CLI prints their message without a traceback.

A message names the parameter it concerns as a [[field]] marker: a flow user reads the field's name
(`target`), and the CLI shows the flag that sets it (`--target`) through one table (`capsel.cli.flags`).
"""

from __future__ import annotations

import errno
import os
import re
from enum import IntEnum
from typing import Callable

FIELD = re.compile(r"\[\[([a-z_.]+)\]\]")
# A write refused for lack of space: the disk, the file size limit, the quota.
DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)
# Access refused by permissions or a read-only mount (EPERM is left out: os.kill raises it too).
UNWRITABLE_ERRNOS = (errno.EACCES, errno.EROFS)
_QUOTED_FILE = re.compile(r'file "([^"]+)"')


class ExitCode(IntEnum):
    """What `capsel` exits with, so a script or CI can tell a typo from bad data from a refused selection."""

    OK = 0
    USAGE = 2  # a wrong option or combination of options (click's own usage errors exit 2 too)
    DATA = 3  # bad or missing input: a file, a database, a model, data the method cannot use
    GATE_FAILED = 4  # the data-quality gate refused a selection; nothing was published
    INTERRUPTED = 5  # Ctrl-C or SIGTERM; finished work is kept and the same command resumes


def named_fields(text: str, name: Callable[[str], str] = lambda field: field) -> str:
    """`text` with each [[field]] marker named by `name` (the field's own name by default)."""
    return FIELD.sub(lambda match: name(match.group(1)), text)


class CapselError(Exception):
    """A problem the user can fix in the input (file, database, model, data); the message says how."""

    exit_code = ExitCode.DATA

    def render(self, name: Callable[[str], str] = lambda field: field) -> str:
        """The message with each [[field]] marker named by `name` (the field's own name by default)."""
        return named_fields(super().__str__(), name)

    def __str__(self) -> str:
        return self.render()


class OptionError(CapselError):
    """An option's value, or a combination of options, that cannot work, whatever the data."""

    exit_code = ExitCode.USAGE


class SchemaVersionError(CapselError):
    """The database was written by a newer capsel than this one."""


class CapselWarning(UserWarning):
    """Something the user allowed or should know, that does not stop the command; the CLI prints `warning: ...`."""


def disk_full_error(exc: BaseException) -> CapselError | None:
    """A CapselError when `exc`, or an error it was raised from, is a write refused for lack of space; else None.

    OSError carries its errno; DuckDB and Arrow only say it in their message (with DuckDB naming the file).
    """
    refused = _refused_write(exc, DISK_FULL_ERRNOS)
    if refused is None:
        return None
    path, reason = refused
    where = f"writing {path}" if path else "writing a file"
    return CapselError(f"disk full while {where} ({reason}); nothing of the work in progress was committed: free "
                       "space and run the same command again")


def unwritable_error(exc: BaseException) -> CapselError | None:
    """A CapselError naming the folder when `exc`, or an error it was raised from, is an access refused by
    permissions or a read-only file system; else None.

    DuckDB opens a database it may write without writing, and fails at the first commit, when it creates the
    write-ahead log beside the database: a read-only folder shows up only then.
    """
    refused = _refused_write(exc, UNWRITABLE_ERRNOS)
    if refused is None:
        return None
    path, reason = refused
    if not path:
        return CapselError(f"{reason}; nothing of the work in progress was committed: fix the permissions, or "
                           "choose places this user may write")
    folder = os.path.dirname(os.path.abspath(str(path)))
    if str(path).endswith(".wal"):
        return CapselError(f"cannot write {path} ({reason}): DuckDB writes its log beside the database, so the "
                           f"folder {folder} must be writable; nothing was committed: make it writable, or move "
                           "the database ([[db_path]])")
    return CapselError(f"{path}: {reason} (in {folder}); nothing of the work in progress was committed: fix the "
                       "permissions, or choose a place this user may write")


def _refused_write(exc: BaseException, errnos: tuple[int, ...]) -> tuple[object, str] | None:
    """(the file, why) when `exc` or an error in its chain is an OSError with one of `errnos`, or a message that
    says one; the file is None when nothing names it."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in errnos:
            return current.filename, os.strerror(current.errno)
        text = str(current)
        for code in errnos:
            if os.strerror(code) in text:
                quoted = _QUOTED_FILE.search(text)
                return (quoted.group(1) if quoted else None), os.strerror(code)
        current = current.__cause__ or current.__context__
    return None
