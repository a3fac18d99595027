"""Reading a row's images (capsel.ingest.image_loading): regular files only, and the row's limits on images and bytes
judged while reading, so a refused row stores nothing and holds no more than its limit."""

from __future__ import annotations

import base64
import io
import os
import random

import pytest
from PIL import Image

from capsel.ingest.image_access import ImageAccess
from capsel.ingest.image_loading import ImageConfig, load_images
from capsel.ingest.reasons import Reason, Rejection

MIB = 2**20


def noise_png(seed: int, side: int = 24) -> bytes:
    """A PNG of random pixels: it does not compress, so its size grows with `side`."""
    buffer = io.BytesIO()
    Image.frombytes("RGB", (side, side), random.Random(seed).randbytes(side * side * 3)).save(buffer, format="PNG")
    return buffer.getvalue()


def config(tmp_path, roots=(), max_bytes=MIB, max_images=8, max_row_bytes=4 * MIB) -> ImageConfig:
    return ImageConfig(str(tmp_path / "store"), str(tmp_path / "pool"), max_bytes, 10**8, ImageAccess(tuple(roots)),
                       max_images, max_row_bytes)


@pytest.fixture
def pool(tmp_path):
    (tmp_path / "pool" / "img").mkdir(parents=True)
    return tmp_path / "pool"


def stored_files(tmp_path) -> list[str]:
    return sorted(path.name for path in (tmp_path / "store").rglob("*") if path.is_file())


@pytest.mark.timeout(20)
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path, pool):
    os.mkfifo(pool / "img" / "pipe.png")
    assert load_images(["img/pipe.png"], config(tmp_path)) == Rejection(
        Reason.IMAGE_NOT_A_FILE, "image 1 (img/pipe.png): a FIFO (named pipe), not a regular file: only regular files "
                                 "are read as images")


@pytest.mark.timeout(20)
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/dev/urandom"])
def test_a_device_under_an_image_root_is_refused_unread(tmp_path, pool, device):
    assert load_images([device], config(tmp_path, roots=["/dev"])) == Rejection(
        Reason.IMAGE_NOT_A_FILE, f"image 1 ({device}): a device, not a regular file: only regular files are read as "
                                 "images")


def test_a_folder_is_not_a_file(tmp_path, pool):
    found = load_images(["img"], config(tmp_path))
    assert (found.reason, found.detail) == (Reason.IMAGE_NOT_A_FILE, "image 1 (img): a folder, not a regular file: "
                                                                      "only regular files are read as images")


def test_too_many_images_are_refused_before_any_is_read(tmp_path, pool):
    # none of them exists: had one been read, the row would be image_missing
    found = load_images([f"img/{index}.png" for index in range(5)], config(tmp_path, max_images=4))
    assert found == Rejection(Reason.IMAGE_ROW_LIMIT, "5 images, over the limit CAPSEL_MAX_IMAGES_PER_ROW=4")


def test_the_row_byte_limit_stops_at_the_image_that_passes_it_and_stores_nothing(tmp_path, pool):
    images = [noise_png(seed) for seed in range(3)]
    for index, data in enumerate(images):
        (pool / "img" / f"{index}.png").write_bytes(data)
    held = len(images[0]) + len(images[1])
    limit = held + len(images[2]) - 1
    refs = ["img/0.png", "img/1.png", "img/2.png"]
    found = load_images(refs, config(tmp_path, max_row_bytes=limit))
    assert found == Rejection(Reason.IMAGE_ROW_LIMIT, (
        f"image 3 (img/2.png): {len(images[2]):,} bytes, which with the {held:,} bytes of the row's earlier images "
        f"is over the row's limit CAPSEL_MAX_ROW_IMAGE_BYTES={limit:,}"))
    assert stored_files(tmp_path) == []
    assert len(load_images(refs, config(tmp_path, max_row_bytes=limit + 1))) == 3  # one byte more: all fit


def test_inline_bytes_and_data_urls_count_against_the_row_limit_too(tmp_path, pool):
    data = noise_png(7)
    url = "data:image/png;base64," + base64.b64encode(data).decode()
    found = load_images([data, url], config(tmp_path, max_row_bytes=2 * len(data) - 1))
    assert found.reason == Reason.IMAGE_ROW_LIMIT and found.detail.startswith(f"image 2 ({url[:80]}")


def test_the_per_image_limit_keeps_its_own_reason_when_it_is_the_smaller(tmp_path, pool):
    data = noise_png(1)
    (pool / "img" / "big.png").write_bytes(data)
    found = load_images(["img/big.png"], config(tmp_path, max_bytes=len(data) - 1, max_row_bytes=10 * len(data)))
    assert found == Rejection(Reason.IMAGE_OVERSIZED, f"image 1 (img/big.png): {len(data):,} bytes, over the byte "
                                                      f"limit CAPSEL_MAX_IMAGE_BYTES={len(data) - 1:,}")


def test_a_refused_reference_is_never_opened(tmp_path, pool):
    (tmp_path / "outside").mkdir()
    os.mkfifo(tmp_path / "outside" / "pipe.png")  # opened, it would be refused as a FIFO instead
    found = load_images(["../outside/pipe.png"], config(tmp_path))
    assert found.reason == Reason.IMAGE_REFUSED
