"""Give candidates of a real DuckDB store images: small PNGs made with Pillow, put in the store beside the DB."""

from __future__ import annotations

import io
from pathlib import Path

import duckdb
import pandas as pd
from PIL import Image

from capsel.image_store.store import ImageStore, StoredImage, image_store_dir

PLACEHOLDER = "<image>"


def png_bytes(index: int, size: tuple[int, int] = (12, 8)) -> bytes:
    """A distinct small PNG per `index` (its colour and width depend on it)."""
    image = Image.new("RGB", (size[0] + index % 5, size[1]), ((37 * index) % 256, (91 * index) % 256, 200))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def attach_images(
    con: duckdb.DuckDBPyConnection, db_path: Path, images_of: dict[str, list[int]]
) -> dict[int, StoredImage]:
    """Give each candidate id the PNGs of its indices (prompt order), as ingest would; return them by index.

    Each image is stored once through ImageStore and gets its `images` row; the instruction gains one
    `<image>` placeholder per image at its start, and `image_sha256` lists the hashes in that order.
    """
    store = ImageStore(image_store_dir(db_path))
    stored = {index: store.put(png_bytes(index)) for index in sorted({i for ids in images_of.values() for i in ids})}
    con.append("images", pd.DataFrame([vars(image) for image in stored.values()]), by_name=True)
    for candidate_id, indices in images_of.items():
        con.execute(
            "update candidates set image_sha256 = ?, instruction = ? || instruction where candidate_id = ?",
            [[stored[i].sha256 for i in indices], f"{PLACEHOLDER}\n" * len(indices), candidate_id],
        )
    return stored
