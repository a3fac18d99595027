"""Where selections are published: a local folder, or a prefix in object storage; a folder counts once its
manifest, written last, is readable there."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import BinaryIO

import orjson

from capsel.object_storage.remote_folder import RemoteFolder
from capsel.object_storage.urls import is_url
from capsel.paths import output_folder

Destination = Path | RemoteFolder
MANIFEST = "manifest.json"


def destination(text: str | Path) -> Destination:
    """A recorded `out_dir` (or an --out URL) as the folder it names."""
    return RemoteFolder(str(text)) if is_url(text) else Path(text)


def read_manifest(folder: Destination) -> dict | None:
    """The folder's manifest, or None when it has none (yet) or it is unreadable.

    A storage error other than a missing object is raised, not read as "no manifest": a reconcile must not
    undo a finished publish because the network failed.
    """
    if isinstance(folder, RemoteFolder):
        content = folder.read(MANIFEST)
    else:
        try:
            content = (folder / MANIFEST).read_bytes()
        except OSError:
            return None
    try:
        manifest = orjson.loads(content) if content is not None else None
    except orjson.JSONDecodeError:
        return None
    return manifest if isinstance(manifest, dict) else None


def open_file(folder: Destination, name: str) -> BinaryIO:
    """The file `name` (relative, `/` between folders) of a published folder, opened for reading."""
    return folder.open(name) if isinstance(folder, RemoteFolder) else (folder / name).open("rb")


def folder_files(folder: Destination) -> dict[str, int]:
    """Every file of a published folder by its relative name, with its size in bytes."""
    if isinstance(folder, RemoteFolder):
        return folder.files()
    return {path.relative_to(folder).as_posix(): path.stat().st_size for path in folder.rglob("*") if path.is_file()}


def is_present(folder: Destination) -> bool:
    """A local folder that is there; a prefix whose manifest is (a prefix without one is a partial upload)."""
    return folder.is_dir() if isinstance(folder, Path) else read_manifest(folder) is not None


def build_root(out_dir: Destination) -> Path:
    """The local folder a selection for `out_dir` is staged in: `out_dir` itself (created), or for storage the
    temp dir (its `.tmp-<selection_id>` is removed with the staging; one a kill leaves is the system's to clear)."""
    if isinstance(out_dir, RemoteFolder):
        return Path(tempfile.gettempdir())
    output_folder(out_dir).mkdir(parents=True, exist_ok=True)
    return out_dir
