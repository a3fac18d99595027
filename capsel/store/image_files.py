"""The image files of pending candidates: absolute paths in prompt order, read beside the DB's file."""

from __future__ import annotations

import duckdb

from capsel.db.records import fetch_records
from capsel.db.sqlfiles import one_row
from capsel.errors import CapselError
from capsel.image_store.database import database_image_root
from capsel.image_store.store import ImageStore


def attach_image_files(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> list[dict]:
    """Give each row an `images` tuple of its image files (empty for text-only candidates)."""
    for row in rows:
        row["images"] = ()
    if not rows or not one_row(con, "store/images_present")[0]:
        return rows
    store = database_image_store(con)
    found = fetch_records(con, "store/candidate_image_files", {"candidate_ids": [row["candidate_id"] for row in rows]})
    files = {
        entry["candidate_id"]: tuple(str(store.path(sha, fmt)) for sha, fmt in zip(entry["sha256s"], entry["formats"]))
        for entry in found
    }
    for row in rows:
        row["images"] = files.get(row["candidate_id"], ())
    return rows


def database_image_store(con: duckdb.DuckDBPyConnection) -> ImageStore:
    """The image store beside the connection's database file (images are never stored for one in memory)."""
    root = database_image_root(con)
    if root is None:
        raise CapselError("this database lives in memory, so it has no image store beside a file")
    return ImageStore(root)
