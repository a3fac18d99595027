"""Pending pages carry each candidate's image files, in prompt order, from the store beside the DB file."""

from __future__ import annotations

import io

from PIL import Image

from capsel.db import open_db
from capsel.image_store.store import ImageStore, image_store_dir
from capsel.store.scope import PendingQuery, Scope, pending_pages
from tests.fixtures.pool import append_candidates


def image_bytes(color: tuple[int, int, int], fmt: str) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (6, 4), color).save(buffer, format=fmt)
    return buffer.getvalue()


def pages(con) -> list[dict]:
    query = PendingQuery("store/result_pending_bounds", "store/result_pending",
                         {"method": "yhat", "model_fingerprint": "m", "config_hash": "g"},
                         {"generation_hash": "g", "cap_config_hashes": []})
    return [row for page in pending_pages(con, query, Scope(), 2) for row in page]


def test_text_pool_rows_have_no_images(tmp_path):
    con = open_db(str(tmp_path / "text.duckdb"))
    append_candidates(con, [{"candidate_id": f"c{i}", "instruction": "q", "response": "a"} for i in range(3)])
    assert [row["images"] for row in pages(con)] == [(), (), ()]


def test_image_rows_get_absolute_files_in_prompt_order(tmp_path):
    db = tmp_path / "pool.duckdb"
    con = open_db(str(db))
    store = ImageStore(image_store_dir(db))
    red, blue = store.put(image_bytes((255, 0, 0), "PNG")), store.put(image_bytes((0, 0, 255), "JPEG"))
    for image in (red, blue):
        con.execute("insert into images values (?, ?, ?, ?, ?)",
                    [image.sha256, image.format, image.width, image.height, image.n_bytes])
    append_candidates(con, [{"candidate_id": f"c{i}", "instruction": "<image> q", "response": "a"} for i in range(3)])
    con.execute("update candidates set image_sha256 = ? where candidate_id = 'c0'", [[blue.sha256, red.sha256]])
    con.execute("update candidates set image_sha256 = ? where candidate_id = 'c2'", [[red.sha256]])

    images = {row["candidate_id"]: row["images"] for row in pages(con)}

    folder = tmp_path / "pool.images"
    assert images == {
        "c0": (str(folder / blue.sha256[:2] / f"{blue.sha256}.jpg"), str(folder / red.sha256[:2] / f"{red.sha256}.png")),
        "c1": (),
        "c2": (str(folder / red.sha256[:2] / f"{red.sha256}.png"),),
    }
    assert Image.open(images["c0"][0]).format == "JPEG"
