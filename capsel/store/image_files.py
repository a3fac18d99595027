"""The image files of pending candidates: absolute paths in prompt order, read beside the DB's file."""

from __future__ import annotations

from pathlib import Path

import duckdb

from capsel.db.records import fetch_records
from capsel.db.sqlfiles import one_row
from capsel.images.store import ImageStore, image_store_dir


def database_file(con: duckdb.DuckDBPyConnection) -> Path:
    """The file of the database a connection works on."""
    return Path(one_row(con, "db/database_file")[0])


def attach_image_files(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> list[dict]:
    """Give each row an `images` tuple of its image files (empty for text-only candidates)."""
    for row in rows:
        row["images"] = ()
    if not rows or not one_row(con, "store/images_present")[0]:
        return rows
    store = ImageStore(image_store_dir(database_file(con)))
    found = fetch_records(con, "store/candidate_image_files", {"candidate_ids": [row["candidate_id"] for row in rows]})
    files = {
        entry["candidate_id"]: tuple(str(store.path(sha, fmt)) for sha, fmt in zip(entry["sha256s"], entry["formats"]))
        for entry in found
    }
    for row in rows:
        row["images"] = files.get(row["candidate_id"], ())
    return rows
