"""Objects an ingest reads from storage: a named object, a prefix's objects (like a folder's files) or a glob's
matches, and their download with the sha256 taken on the way."""

from __future__ import annotations

import hashlib
import io
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Callable, Iterable, Iterator

from capsel.errors import CapselError
from capsel.object_storage.urls import Located, filesystem, storage_errors

_GLOB_CHARS = "*?["


class RemoteFile(Located):
    """An object in storage: its URL (never credentials) and its size when listed."""

    __slots__ = ("size",)

    def __init__(self, url: str, size: int) -> None:
        super().__init__(url)
        self.size = size

    @property
    def suffix(self) -> str:
        """The name's suffix, which says how to read the object."""
        return PurePosixPath(self.url).suffix


def remote_files(url: str, readable: Callable[[str], str | None],
                 missing_ok: bool = False) -> tuple[list[RemoteFile], list[tuple[str, str]]]:
    """The objects `url` names, in name order, and (URL, why) for the entries left out.

    An object is itself; a prefix gives its objects, not those under deeper prefixes; a glob gives its matches.
    `readable(name)` says why an object's name cannot be read (its suffix), or None. A URL naming nothing is a
    CapselError, or with `missing_ok` nothing.
    """
    fs, path = filesystem(url)
    with storage_errors(f"{url}: cannot list it"):
        try:
            info = None if any(char in path for char in _GLOB_CHARS) else fs.info(path)
        except FileNotFoundError:
            if missing_ok:
                return [], []
            raise CapselError(f"{url}: no such object or prefix") from None
        if info is not None and info["type"] != "directory":
            return [RemoteFile(fs.unstrip_protocol(info["name"]), int(info.get("size") or 0))], []
        entries: Iterable[dict] = fs.ls(path, detail=True) if info is not None else fs.glob(path, detail=True).values()
    files, skipped = [], []
    for entry in sorted(entries, key=lambda entry: entry["name"]):
        entry_url = fs.unstrip_protocol(entry["name"])
        problem = "a folder (folders inside a folder are not read)" if entry["type"] == "directory" else None
        problem = problem or readable(entry_url)
        if problem is None:
            files.append(RemoteFile(entry_url, int(entry.get("size") or 0)))
        else:
            skipped.append((entry_url, problem))
    return files, skipped


def download(remote: RemoteFile, target: Path, chunk_bytes: int = 8 << 20,
             progress: Callable[[int], None] = lambda done: None) -> tuple[str, int]:
    """Copy `remote` to `target`, reading it once; returns its sha256 (taken on the way) and its size.

    Storage errors are one CapselError line; a local write error (a full disk) stays an OSError with its errno.
    """
    digest = hashlib.sha256()
    n_bytes = 0
    with _reading(remote):
        source = open_remote(remote)
    with source, open(target, "wb") as sink:
        while chunk := _read(source, chunk_bytes, remote):
            digest.update(chunk)
            sink.write(chunk)
            n_bytes += len(chunk)
            progress(n_bytes)
    return digest.hexdigest(), n_bytes


def _read(source: BinaryIO, n_bytes: int, remote: RemoteFile) -> bytes:
    with _reading(remote):
        return source.read(n_bytes)


@contextmanager
def _reading(remote: RemoteFile) -> Iterator[None]:
    try:
        with storage_errors(f"{remote}: cannot read it; nothing of it was committed"):
            yield
    except FileNotFoundError:
        raise CapselError(f"{remote}: the object is gone; nothing of it was committed") from None


def open_remote(remote: RemoteFile) -> BinaryIO:
    """`remote` opened for reading (seekable, so Parquet can read its footer)."""
    fs, path = filesystem(remote.url)
    # buffered: the JSON framer peeks at the head of a file
    return io.BufferedReader(fs.open(path, "rb"))
