"""What a file that is not a regular file is (a folder, FIFO, socket or device), judged by its mode alone."""

from __future__ import annotations

import stat


def special_kind(mode: int) -> str | None:
    """A few words naming what `mode` describes when it is not a regular file, or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device"
