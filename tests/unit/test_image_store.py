"""The content-addressed image store: hash of the bytes, Pillow's format, atomic files, no path escapes."""

from __future__ import annotations

import hashlib
import io

import pytest
from PIL import Image

from capsel.image_store.store import ImageStore, describe_image, image_store_dir


def png_bytes(color: tuple[int, int, int], size=(7, 5)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def test_put_stores_once_under_the_hash_of_the_bytes(tmp_path):
    store = ImageStore(image_store_dir(tmp_path / "pool.duckdb"))
    data = png_bytes((255, 0, 0))
    first, second = store.put(data), store.put(data)
    assert first == second
    assert first.sha256 == hashlib.sha256(data).hexdigest()
    assert (first.format, first.width, first.height, first.n_bytes) == ("png", 7, 5, len(data))
    path = store.path(first.sha256, first.format)
    assert path == tmp_path / "pool.images" / first.sha256[:2] / f"{first.sha256}.png"
    assert path.read_bytes() == data
    assert [p.name for p in path.parent.iterdir()] == [path.name], "no temporary file left behind"


def test_jpeg_gets_the_jpg_extension(tmp_path):
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), (0, 0, 255)).save(buffer, format="JPEG")
    stored = ImageStore(tmp_path).put(buffer.getvalue())
    assert stored.format == "jpeg" and ImageStore(tmp_path).path(stored.sha256, "jpeg").suffix == ".jpg"


def test_unreadable_and_truncated_bytes_are_refused(tmp_path):
    with pytest.raises(OSError):
        describe_image(b"not an image at all")
    with pytest.raises(OSError):
        describe_image(png_bytes((0, 255, 0), size=(64, 64))[:60])
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("bad", ["../" * 3 + "etc", "a" * 63, "A" * 64, "0" * 64 + "/.."])
def test_a_path_is_only_ever_made_from_a_sha256(tmp_path, bad):
    with pytest.raises(ValueError):
        ImageStore(tmp_path).path(bad, "png")
