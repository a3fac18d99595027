"""Content-addressed image files beside the DB: `<db stem>.images/<sha256[:2]>/<sha256>.<ext>`.

The sha256 is of the file's bytes as they arrived; the bytes are stored unchanged, so the same image from two
sources (a path, a URL, a Parquet cell) is one file and one `images` row.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

# Pillow's format names whose usual file extension is not the lower-cased name
_EXTENSIONS = {"jpeg": "jpg", "tiff": "tif", "mpo": "jpg"}
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class StoredImage:
    """One stored image: its content hash, Pillow's format name (lower case), size in pixels and bytes."""

    sha256: str
    format: str
    width: int
    height: int
    n_bytes: int


def image_store_dir(db_path: Path | str) -> Path:
    """The folder that holds a DB's images: `<db folder>/<db stem>.images`."""
    db_path = Path(db_path)
    return db_path.parent / f"{db_path.stem}.images"


def extension(fmt: str) -> str:
    """The file extension an image of Pillow format `fmt` is stored under."""
    fmt = fmt.lower()
    return _EXTENSIONS.get(fmt, fmt)


def describe_image(data: bytes) -> StoredImage:
    """Hash and read the header of image bytes; raises PIL's UnidentifiedImageError (or OSError) if unreadable."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        # verify() walks the data: a truncated or corrupt file fails here, not later at scoring time
        image.verify()
        fmt, (width, height) = (image.format or "").lower(), image.size
    if not fmt:
        raise OSError("Pillow read no image format")
    return StoredImage(hashlib.sha256(data).hexdigest(), fmt, width, height, len(data))


class ImageStore:
    """The image files under one root folder, named by their sha256."""

    def __init__(self, root: Path | str):
        self.root = Path(root)

    def path(self, sha256: str, fmt: str) -> Path:
        """Where the image with this hash and format lives (the hash is checked: no path can leave the root)."""
        if not _SHA256.fullmatch(sha256):
            raise ValueError(f"not a sha256 hex digest: {sha256!r}")
        return self.root / sha256[:2] / f"{sha256}.{extension(fmt)}"

    def put(self, data: bytes) -> StoredImage:
        """Store image bytes once (atomically: a reader never sees half a file) and describe them."""
        stored = describe_image(data)
        target = self.path(stored.sha256, stored.format)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
            try:
                with os.fdopen(handle, "wb") as out:
                    out.write(data)
                os.replace(temporary, target)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        return stored
