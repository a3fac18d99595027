"""The bytes an ingest parses: a local file where it lies, an object in storage downloaded once into scratch."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, NamedTuple

from capsel.ingest.inputs import InputFile
from capsel.ingest.scratch import scratch_folder
from capsel.object_storage.remote_files import download
from capsel.versioning import file_sha256


class LocalCopy(NamedTuple):
    """A file on this machine holding the input's bytes, with their sha256 and size."""

    path: Path
    sha256: str
    n_bytes: int


@contextmanager
def local_copy(source: InputFile, progress: Callable[[int], None] = lambda done: None) -> Iterator[LocalCopy]:
    """A local file as it is; an object downloaded into a scratch folder (removed on the way out).

    The sha256 must be known before the first row is written (it names the source), and Parquet is read
    footer first, so an object is not parsed straight off the network: it is read once, hashed on the way,
    and parsed from disk, where parse workers can also read their own byte ranges.
    """
    if isinstance(source, Path):
        yield LocalCopy(source, file_sha256(source), os.path.getsize(source))
        return
    with scratch_folder() as folder:
        target = Path(folder) / f"download{source.suffix.lower()}"
        sha256, n_bytes = download(source, target, progress=progress)
        yield LocalCopy(target, sha256, n_bytes)
