"""A folder in object storage (a prefix): what a publish uploads, with one file written last, and takes back."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from capsel.errors import CapselError
from capsel.faults import fault_point
from capsel.object_storage.urls import Located, filesystem, joined, storage_errors

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem


class RemoteFolder(Located):
    """A prefix of object storage, named by its URL (never credentials); `folder / name` is a prefix inside it."""

    __slots__ = ()

    def __init__(self, url: str) -> None:
        fs, path = filesystem(url)  # refuses credentials in the URL and protocols fsspec cannot serve
        super().__init__(fs.unstrip_protocol(path.rstrip("/")))

    def __truediv__(self, name: str) -> RemoteFolder:
        if not name or "/" in name or name in (".", ".."):
            raise ValueError(f"{name!r} is not one path component")  # a name from data stays inside its folder
        return RemoteFolder(joined(self.url, name))

    def exists(self) -> bool:
        """True when any object lies under the prefix."""
        fs, path = filesystem(self.url)
        fs.invalidate_cache(path)  # another process may have written or removed it since this one listed
        with storage_errors(f"{self.url}: cannot list it"):
            return bool(fs.exists(path))

    def read(self, name: str) -> bytes | None:
        """The bytes of the object `name` directly under the prefix, or None when there is none."""
        fs, path = filesystem(joined(self.url, name))
        try:
            with storage_errors(f"{self.url}: cannot read {name}"):
                return fs.cat_file(path)
        except FileNotFoundError:
            return None

    def files(self) -> dict[str, int]:
        """Every object under the prefix by its name relative to it (`gate/index.html`), with its size."""
        fs, path = filesystem(self.url)
        fs.invalidate_cache(path)
        with storage_errors(f"{self.url}: cannot list it"):
            found = fs.find(path, detail=True)
        root = path.rstrip("/") + "/"
        return {name[len(root):]: int(info.get("size") or 0) for name, info in found.items() if name.startswith(root)}

    def open(self, name: str) -> BinaryIO:
        """The object `name` (relative to the prefix, `/` between folders) opened for reading."""
        fs, path = filesystem(joined(self.url, *name.split("/")))
        with storage_errors(f"{self.url}: cannot read {name}"):
            return fs.open(path, "rb")

    def upload(self, local: Path, last: str) -> None:
        """Copy the files under `local` into the prefix, the file `last` (relative to `local`) after all others.

        Storage has no rename: a reader that trusts only a prefix holding `last` never sees a partial upload.
        """
        fs, path = filesystem(self.url)
        names = sorted(str(Path(directory, name).relative_to(local))
                       for directory, _, files in os.walk(local) for name in files)
        if last not in names:
            raise CapselError(f"{local}: no {last} to write last")
        for name in names:
            if name != last:
                self._put(fs, local / name, joined(path, *Path(name).parts))
        fault_point("upload.before_last_file")
        self._put(fs, local / last, joined(path, *Path(last).parts))

    def _put(self, fs: AbstractFileSystem, source: Path, target: str) -> None:
        try:
            with storage_errors(f"{self.url}: cannot upload {source.name}"):
                fs.put_file(str(source), target)
        except FileNotFoundError as exc:  # what a write means by it: the bucket does not exist
            raise CapselError(f"{self.url}: cannot upload {source.name} ({exc})") from exc

    def remove(self, first: str) -> None:
        """Delete everything under the prefix, the object `first` before the rest (so it never sits over a partial
        folder); a prefix already gone is fine."""
        fs, path = filesystem(self.url)
        with storage_errors(f"{self.url}: cannot remove it"):
            try:
                fs.rm_file(joined(path, first))
            except FileNotFoundError:
                pass
            fs.invalidate_cache(path)
            if fs.exists(path):
                fs.rm(path, recursive=True)
