"""Candidates' image files, in placeholder order: what scoring, publish and lineage read."""

from __future__ import annotations

from typing import Any, Sequence

import duckdb

from capsel.db.records import fetch_records
from capsel.errors import CapselError
from capsel.images.database import database_image_root
from capsel.images.store import ImageStore


def candidate_images(con: duckdb.DuckDBPyConnection, candidate_ids: Sequence[str]) -> list[dict[str, Any]]:
    """One record per image of the given candidates (candidate_id, position, sha256, format, width, height,
    n_bytes, path), by candidate and position; text-only candidates have none."""
    records = fetch_records(con, "images/candidate_images", {"candidate_ids": list(candidate_ids)})
    if not records:
        return records
    root = database_image_root(con)
    if root is None:
        raise CapselError("this database is in memory, so it has no image store")
    store = ImageStore(root)
    return [{**record, "path": str(store.path(record["sha256"], record["format"]))} for record in records]


def candidate_image_paths(con: duckdb.DuckDBPyConnection, candidate_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """Each candidate's image file paths in placeholder order (absent for text-only candidates)."""
    paths: dict[str, list[str]] = {}
    for record in candidate_images(con, candidate_ids):
        paths.setdefault(record["candidate_id"], []).append(record["path"])
    return {candidate_id: tuple(found) for candidate_id, found in paths.items()}
