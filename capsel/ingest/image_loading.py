"""Read a row's images (paths, URLs, data: URLs, bytes), check them, and store them content-addressed.

Runs where rows are classified, in the ingest worker processes when there are any. A row's images are all read
and checked before any is stored, so a row quarantined for its second image leaves no file for its first.
"""

from __future__ import annotations

import base64
import binascii
import os
import warnings
from dataclasses import dataclass
from typing import Iterable

from capsel.errors import CapselError
from capsel.images.store import ImageStore, StoredImage, describe_image
from capsel.ingest.reasons import Reason, Rejection
from capsel.storage.urls import filesystem, is_url, joined, local_path_text, storage_errors

_SHOWN_CHARS = 80


@dataclass(frozen=True)
class ImageConfig:
    """Where images are stored and read from, and how large one may be.

    `store_root` is None for a database in memory, which has no folder to keep images beside; `base` is the folder
    (or storage URL prefix) of the pool file, which relative paths are read from.
    """

    store_root: str | None
    base: str
    max_bytes: int
    max_pixels: int


def load_images(refs: Iterable[object], config: ImageConfig) -> list[StoredImage] | Rejection:
    """Store every image of a row and describe them in order, or the first reason one cannot be used."""
    found: list[tuple[bytes, StoredImage]] = []
    for number, ref in enumerate(refs, 1):
        data = _read(ref, config)
        if isinstance(data, Rejection):
            return data._replace(detail=f"image {number} ({_shown(ref)}): {data.detail}")
        described = _describe(data, config.max_pixels)
        if isinstance(described, Rejection):
            return described._replace(detail=f"image {number} ({_shown(ref)}): {described.detail}")
        found.append((data, described))
    if config.store_root is None:
        raise CapselError("rows with images need a database file: images are stored beside it, and this database "
                          "is in memory")
    store = ImageStore(config.store_root)
    for data, _ in found:
        store.put(data)
    return [described for _, described in found]


def _read(ref: object, config: ImageConfig) -> bytes | Rejection:
    """The bytes an image reference names (an HF image struct's bytes win over its path)."""
    if isinstance(ref, dict):
        ref = ref.get("bytes") if ref.get("bytes") is not None else ref.get("path")
    if ref is None:
        return Rejection(Reason.IMAGE_MISSING, "no image given (null)")
    if isinstance(ref, (bytes, bytearray, memoryview)):
        return _sized(bytes(ref), config.max_bytes)
    if not isinstance(ref, str):
        return Rejection(Reason.IMAGE_UNREADABLE, f"{type(ref).__name__}, not a path, URL or bytes")
    if not ref.strip():
        return Rejection(Reason.IMAGE_MISSING, "empty path")
    if ref.startswith("data:"):
        return _data_url(ref, config.max_bytes)
    if is_url(ref):
        return _read_url(ref, config.max_bytes)
    path = local_path_text(ref)
    if os.path.isabs(path):
        return _read_file(path, config.max_bytes)
    if is_url(config.base):
        return _read_url(joined(config.base, path), config.max_bytes)
    return _read_file(os.path.join(config.base, path), config.max_bytes)


def _sized(data: bytes, max_bytes: int) -> bytes | Rejection:
    if not data:
        return Rejection(Reason.IMAGE_MISSING, "0 bytes")
    if len(data) > max_bytes:
        return _too_many_bytes(len(data), max_bytes)
    return data


def _too_many_bytes(n_bytes: int, max_bytes: int, over: str = "") -> Rejection:
    return Rejection(Reason.IMAGE_OVERSIZED,
                     f"{over or f'{n_bytes:,}'} bytes, over the byte limit CAPSEL_MAX_IMAGE_BYTES={max_bytes:,}")


def _read_file(path: str, max_bytes: int) -> bytes | Rejection:
    try:
        size = os.stat(path).st_size
        if size > max_bytes:  # judged before reading: a huge file costs nothing
            return _too_many_bytes(size, max_bytes)
        with open(path, "rb") as handle:
            return _sized(handle.read(), max_bytes)
    except (FileNotFoundError, NotADirectoryError):
        return Rejection(Reason.IMAGE_MISSING, "no such file")
    except OSError as exc:
        return Rejection(Reason.IMAGE_UNREADABLE, f"cannot read it ({exc.strerror or exc})")


def _read_url(url: str, max_bytes: int) -> bytes | Rejection:
    """An object's bytes (at most one past the limit are read); a storage failure other than a missing object
    fails the file, since quarantining every row of an unreachable bucket would hide the outage."""
    fs, path = filesystem(url)
    try:
        with storage_errors(f"{url}: cannot read the image"), fs.open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except FileNotFoundError:
        return Rejection(Reason.IMAGE_MISSING, "no such object")
    if len(data) > max_bytes:
        return _too_many_bytes(len(data), max_bytes, over=f"more than {max_bytes:,}")
    return _sized(data, max_bytes)


def _data_url(url: str, max_bytes: int) -> bytes | Rejection:
    """The bytes of a `data:image/...;base64,` URL (its size judged before decoding)."""
    header, comma, payload = url.partition(",")
    if not comma or not header.endswith(";base64"):
        return Rejection(Reason.IMAGE_UNREADABLE, "a data: URL that is not base64 (data:image/...;base64,...)")
    if len(payload) // 4 * 3 > max_bytes + 2:
        return _too_many_bytes(len(payload) // 4 * 3, max_bytes, over=f"about {len(payload) // 4 * 3:,}")
    try:
        return _sized(base64.b64decode(payload, validate=True), max_bytes)
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
