"""Read a row's images (paths, URLs, data: URLs, bytes), check them, and store them content-addressed.

Runs where rows are classified, in the ingest worker processes when there are any. A row's images are all read
and checked before any is stored, so a row quarantined for its second image leaves no file for its first; the
row's limits (images, bytes) are what bound the memory that takes. Where a reference may be read from is
`image_access`'s to say: nothing it refuses is opened.
"""

from __future__ import annotations

import base64
import binascii
import os
import stat
import warnings
from dataclasses import dataclass
from typing import Iterable

from capsel.errors import CapselError
from capsel.image_store.store import ImageStore, StoredImage, describe_image
from capsel.ingest.file_kind import special_kind
from capsel.ingest.image_access import ImageAccess, LocalImage, WebImage, locate
from capsel.ingest.image_allowance import ByteAllowance
from capsel.ingest.image_web import fetch
from capsel.ingest.reasons import Reason, Rejection
from capsel.object_storage.urls import filesystem, storage_errors

_SHOWN_CHARS = 80
# Opened without following a last symlink (the path is already real) and without waiting: a FIFO that slipped in
# after the check opens at once, and fstat then refuses it.
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class ImageConfig:
    """Where images are stored and read from, and how large one image and one row's images may be.

    `store_root` is None for a database in memory, which has no folder to keep images beside; `base` is the folder
    (or storage URL prefix) of the pool file, which relative paths are read from and which images may always come
    from; `access` names the other places they may.
    """

    store_root: str | None
    base: str
    max_bytes: int
    max_pixels: int
    access: ImageAccess
    max_images: int
    max_row_bytes: int


def load_images(refs: Iterable[object], config: ImageConfig) -> list[StoredImage] | Rejection:
    """Store every image of a row and describe them in order, or the first reason one cannot be used."""
    refs = tuple(refs)
    if len(refs) > config.max_images:  # judged before reading any
        return Rejection(Reason.IMAGE_ROW_LIMIT, f"{len(refs):,} images, over the limit "
                                                 f"CAPSEL_MAX_IMAGES_PER_ROW={config.max_images:,}")
    found: list[tuple[bytes, StoredImage]] = []
    held = 0
    for number, ref in enumerate(refs, 1):
        data = _read(ref, config, ByteAllowance(config.max_bytes, config.max_row_bytes, held))
        if isinstance(data, Rejection):
            return data._replace(detail=f"image {number} ({_shown(ref)}): {data.detail}")
        described = _describe(data, config.max_pixels)
        if isinstance(described, Rejection):
            return described._replace(detail=f"image {number} ({_shown(ref)}): {described.detail}")
        found.append((data, described))
        held += len(data)
    if config.store_root is None:
        raise CapselError("rows with images need a database file: images are stored beside it, and this database "
                          "is in memory")
    store = ImageStore(config.store_root)
    for data, _ in found:
        store.put(data)
    return [described for _, described in found]


def _read(ref: object, config: ImageConfig, allowance: ByteAllowance) -> bytes | Rejection:
    """The bytes an image reference names (an HF image struct's bytes win over its path)."""
    if isinstance(ref, dict):
        ref = ref.get("bytes") if ref.get("bytes") is not None else ref.get("path")
    if ref is None:
        return Rejection(Reason.IMAGE_MISSING, "no image given (null)")
    if isinstance(ref, (bytes, bytearray, memoryview)):
        return allowance.judged(bytes(ref))
    if not isinstance(ref, str):
        return Rejection(Reason.IMAGE_UNREADABLE, f"{type(ref).__name__}, not a path, URL or bytes")
    if not ref.strip():
        return Rejection(Reason.IMAGE_MISSING, "empty path")
    if ref.startswith("data:"):
        return _data_url(ref, allowance)
    where = locate(ref, config.base, config.access)
    if isinstance(where, Rejection):
        return where
    if isinstance(where, LocalImage):
        return _read_file(where.path, allowance)
    if isinstance(where, WebImage):
        return fetch(where.url, allowance, lambda url: isinstance(locate(url, config.base, config.access), WebImage))
    return _read_storage(where.url, allowance)


def _read_file(path: str, allowance: ByteAllowance) -> bytes | Rejection:
    """A regular file's bytes; anything else is refused before it is opened (opening a device can act: a tape
    rewinds, a watchdog arms) and again by the open descriptor, in case the path changed in between."""
    try:
        kind = special_kind(os.stat(path).st_mode)
        if kind is not None:
            return _not_a_file(kind)
        with os.fdopen(os.open(path, _OPEN_FLAGS), "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                return _not_a_file(special_kind(info.st_mode) or "not a regular file")
            if info.st_size > allowance.n_bytes:  # judged before reading: a huge file costs nothing
                return allowance.refusal(f"{info.st_size:,}")
            return allowance.judged(handle.read(allowance.n_bytes + 1))  # it may have grown since
    except (FileNotFoundError, NotADirectoryError):
        return Rejection(Reason.IMAGE_MISSING, "no such file")
    except OSError as exc:
        return Rejection(Reason.IMAGE_UNREADABLE, f"cannot read it ({exc.strerror or exc})")


def _not_a_file(kind: str) -> Rejection:
    return Rejection(Reason.IMAGE_NOT_A_FILE, f"{kind}, not a regular file: only regular files are read as images")


def _read_storage(url: str, allowance: ByteAllowance) -> bytes | Rejection:
    """An object's bytes (at most one past the allowance are read); a storage failure other than a missing object
    fails the file, since quarantining every row of an unreachable bucket would hide the outage."""
    fs, path = filesystem(url)
    try:
        with storage_errors(f"{url}: cannot read the image"), fs.open(path, "rb") as handle:
            data = handle.read(allowance.n_bytes + 1)
    except FileNotFoundError:
        return Rejection(Reason.IMAGE_MISSING, "no such object")
    if len(data) > allowance.n_bytes:
        return allowance.refusal(f"more than {allowance.n_bytes:,}")
    return allowance.judged(data)


def _data_url(url: str, allowance: ByteAllowance) -> bytes | Rejection:
    """The bytes of a `data:image/...;base64,` URL (its size judged before decoding)."""
    header, comma, payload = url.partition(",")
    if not comma or not header.endswith(";base64"):
        return Rejection(Reason.IMAGE_UNREADABLE, "a data: URL that is not base64 (data:image/...;base64,...)")
    if len(payload) // 4 * 3 > allowance.n_bytes + 2:
        return allowance.refusal(f"about {len(payload) // 4 * 3:,}")
    try:
        return allowance.judged(base64.b64decode(payload, validate=True))
    except binascii.Error as exc:
        return Rejection(Reason.IMAGE_UNREADABLE, f"bad base64 ({exc})")


def _describe(data: bytes, max_pixels: int) -> StoredImage | Rejection:
    """Pillow's verdict on the bytes and the pixel limit."""
    from PIL import Image, UnidentifiedImageError

    limit = f"over the pixel limit CAPSEL_MAX_IMAGE_PIXELS={max_pixels:,}"
    try:
        with warnings.catch_warnings():
            # the pixel limit below judges size; Pillow's own bomb warning would only repeat it
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            described = describe_image(data)
    except Image.DecompressionBombError as exc:
        return Rejection(Reason.IMAGE_OVERSIZED, f"{exc}; {limit}")
    except UnidentifiedImageError:  # its message names a BytesIO's address: nothing a reader can use
        return Rejection(Reason.IMAGE_UNREADABLE, "Pillow recognises no image format in it")
    except Exception as exc:  # noqa: BLE001 (Pillow raises OSError, SyntaxError, ValueError... for broken data)
        return Rejection(Reason.IMAGE_UNREADABLE, f"Pillow cannot read it ({type(exc).__name__}: {exc})")
    pixels = described.width * described.height
    if pixels > max_pixels:
        return Rejection(Reason.IMAGE_OVERSIZED, f"{described.width}x{described.height} = {pixels:,} pixels, {limit}")
    return described


def _shown(ref: object) -> str:
    """A reference short enough for a one-line detail (a data: URL shows only its head)."""
    if isinstance(ref, dict):
        ref = ref.get("bytes") if ref.get("bytes") is not None else ref.get("path")
    if isinstance(ref, (bytes, bytearray, memoryview)):
        return f"{len(ref):,} bytes"
    text = str(ref)
    return text if len(text) <= _SHOWN_CHARS else f"{text[:_SHOWN_CHARS]}… ({len(text):,} chars)"
