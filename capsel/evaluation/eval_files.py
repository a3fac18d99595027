"""Evaluation files are read once: opened when they are checked, copied into the run's staging and hashed there.

Everything later (fine-tuning first, then the evaluation) reads the copy, so a file swapped for a symlink, a
FIFO or another file meanwhile changes nothing. The open refuses what a regular file path must not be: a
symlink as its last component (O_NOFOLLOW), a FIFO or device (checked on the open descriptor, which O_NONBLOCK
keeps a FIFO from blocking), a path whose opened file is not the one named, and a file over the size bound.
"""

from __future__ import annotations

import hashlib
import os
import stat
import uuid
from pathlib import Path

from capsel.errors import CapselError

MAX_EVAL_FILE_BYTES = 4 << 30
INPUTS = Path("evaluations") / "inputs"  # under a run's output root
_CHUNK = 8 << 20


def staging_folder(root: Path) -> Path:
    """Where the evaluation inputs of runs writing under `root` are copied."""
    return root / INPUTS


def stage_file(path: Path, staging: Path, what: str) -> tuple[Path, str]:
    """(the copy under `staging`, its sha256) of the regular file `path`, read once; one error line otherwise."""
    text = os.fspath(path)
    if "\x00" in text:
        raise CapselError(f"{what} {text!r}: a path with a NUL byte names no file")
    try:
        fd = os.open(text, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError as error:
        where = Path(text).absolute()
        read_from = "" if Path(text).is_absolute() else f" (a relative path is read from {Path.cwd()})"
        raise CapselError(f"{what} {text}: no such file {where}{read_from}; give the path of the file that holds "
                          "the rows") from error
    except OSError as error:
        problem = "is a symbolic link: an evaluation file is read only as itself" if Path(text).is_symlink() else \
            error.strerror
        raise CapselError(f"{what} {text} {problem}") from error
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise CapselError(f"{what} {text} is not a regular file (a folder, FIFO, socket or device); refused")
        if info.st_size > MAX_EVAL_FILE_BYTES:
            raise CapselError(f"{what} {text} holds {info.st_size:,} bytes, over the {MAX_EVAL_FILE_BYTES:,}-byte "
                              "bound of an evaluation file")
        return _copy(fd, Path(text), staging, what)
    finally:
        os.close(fd)


def _copy(fd: int, source: Path, staging: Path, what: str) -> tuple[Path, str]:
    staging.mkdir(parents=True, exist_ok=True)
    partial = staging / f".{uuid.uuid4().hex}.partial"
    digest, size = hashlib.sha256(), 0
    try:
        with open(partial, "wb") as copy:
            while chunk := os.read(fd, _CHUNK):
                size += len(chunk)
                if size > MAX_EVAL_FILE_BYTES:  # it grew while it was read
                    raise CapselError(f"{what} {source} grew past the {MAX_EVAL_FILE_BYTES:,}-byte bound while "
                                      "it was read")
                digest.update(chunk)
                copy.write(chunk)
        sha256 = digest.hexdigest()
        # named by content, keeping the suffix the readers choose a format by
        final = staging / f"{sha256}{''.join(source.suffixes[-2:]).lower()}"
        os.replace(partial, final)
    finally:
        partial.unlink(missing_ok=True)
    return final, sha256
