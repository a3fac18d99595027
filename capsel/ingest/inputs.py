"""Which files an ingest reads: the files named and the regular files of the folders named, with what a folder
holds that is not read and why; nothing is opened until it is known to be a regular file.

Opening a FIFO waits for a writer forever, so every path is judged by its stat (symlinks followed) first.
A URL (s3://, gs://, any fsspec protocol) names an object, a prefix read like a folder, or a glob.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Sequence

from capsel.errors import CapselError, OptionError
from capsel.ingest.file_kind import special_kind
from capsel.ingest.readers import FORMATS, format_for
from capsel.object_storage.remote_files import RemoteFile, open_remote, remote_files
from capsel.object_storage.urls import is_url, local_path_text

# A file on this machine, or an object in storage.
InputFile = Path | RemoteFile
# Why a file of 0 bytes is not read, in any format: it holds no rows (and Parquet not even a footer).
EMPTY_FILE = "an empty file (0 bytes), no rows to read"


@dataclass(frozen=True)
class Skipped:
    """An entry of a named folder that is not read, and why."""

    path: Path | str
    reason: str


@dataclass(frozen=True)
class Inputs:
    """The files to read, in order, and the folder entries left out."""

    files: list[InputFile]
    skipped: list[Skipped] = field(default_factory=list)


def resolve_inputs(paths: Sequence[str | InputFile]) -> Inputs:
    """Input files in order (a folder gives its supported regular files by name); CapselError if any is unusable."""
    if not paths:
        raise OptionError("give at least one file or folder to ingest")
    files: list[InputFile] = []
    skipped: list[Skipped] = []
    for given in paths:
        if is_url(given):
            files.extend(_remote_inputs(str(given), skipped))
            continue
        path = Path(local_path_text(str(given))).expanduser()
        if path.is_dir():
            found, left_out = folder_files(path)
            if not found:
                others = f" ({len(left_out)} other entries, not read)" if left_out else ""
                raise CapselError(f"{path}: folder holds no {', '.join(FORMATS)} files{others}")
            files.extend(found)
            skipped.extend(left_out)
        else:
            files.append(named_file(path))
    for local in files:
        if isinstance(local, Path):
            try:
                with open(local, "rb"):
                    pass
            except OSError as exc:
                raise CapselError(f"{local}: cannot read it ({exc.strerror or exc})") from exc
    # the folder canonical, the name as given: a link's own suffix, not its target's, says how to read it
    return Inputs([item.parent.resolve() / item.name if isinstance(item, Path) else item for item in files], skipped)


def input_size(path: InputFile) -> int:
    """Bytes of an input: a local file's now, an object's as listed."""
    return os.path.getsize(path) if isinstance(path, Path) else path.size


def open_input(path: InputFile) -> BinaryIO:
    """An input opened for reading, from disk or from storage."""
    return open(path, "rb") if isinstance(path, Path) else open_remote(path)


def _remote_inputs(url: str, skipped: list[Skipped]) -> list[RemoteFile]:
    """The objects a URL names (see `remote_files`); the entries left out join `skipped`."""
    found, left_out = remote_files(url, unsupported)
    skipped.extend(Skipped(entry, reason) for entry, reason in left_out)
    if not found:
        others = f" ({len(left_out)} other entries, not read)" if left_out else ""
        raise CapselError(f"{url}: holds no {', '.join(FORMATS)} objects{others}")
    if len(found) == 1 and not left_out:
        format_for(found[0])  # a single object named with an unsupported suffix is refused like a file
    return found


def unsupported(url: str) -> str | None:
    """Why an object's name cannot be read (its suffix), or None."""
    return None if PurePosixPath(url).suffix.lower() in FORMATS else f"not a {', '.join(FORMATS)} file"


def named_file(path: Path) -> Path:
    """`path` when it is a regular file (or a link to one) of a supported format; else a CapselError saying why."""
    problem = not_regular(path)
    if problem is not None:
        raise CapselError(f"{path}: {problem}")
    format_for(path)
    return path


def folder_files(folder: Path) -> tuple[list[Path], list[Skipped]]:
    """A folder's supported regular files by name, and every other entry with the reason it is not read."""
    try:
        entries = sorted(folder.iterdir())
    except OSError as exc:
        raise CapselError(f"{folder}: cannot list it ({exc.strerror or exc})") from exc
    files: list[Path] = []
    skipped: list[Skipped] = []
    real_folder = os.path.realpath(folder)
    for entry in entries:
        problem = _leaves(entry, real_folder) or not_regular(entry)
        if problem is None and entry.suffix.lower() not in FORMATS:
            problem = f"not a {', '.join(FORMATS)} file"
        if problem is None:
            files.append(entry)
        else:
            skipped.append(Skipped(entry, problem))
    return files, skipped


def _leaves(entry: Path, real_folder: str) -> str | None:
    """Why a symlink in a folder is not read when it leads out of the folder, or None.

    Whoever may drop files into an incoming folder may not thereby make capsel read the rest of the machine
    (a link to /etc/passwd would land in the database line by line).
    """
    if not entry.is_symlink():
        return None
    target = os.path.realpath(entry)
    if os.path.commonpath([target, real_folder]) == real_folder:
        return None
    return f"a symlink to {target}, outside the folder: a folder gives only the files inside it"


def not_regular(path: Path) -> str | None:
    """Why `path` (symlinks followed) is not a regular file that can be read, or None when it is one."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "a symlink to a missing file" if path.is_symlink() else "no such file"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symlink loop"
        return f"cannot read it ({exc.strerror or exc})"
    kind = special_kind(mode)
    if kind is None:
        return None
    if stat.S_ISDIR(mode):
        return f"{kind} (folders inside a folder are not read)"
    if stat.S_ISFIFO(mode):
        return f"{kind}, not a file: reading it would wait for a writer"
    return f"{kind}, not a file"
