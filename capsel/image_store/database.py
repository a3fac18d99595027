"""The image store that belongs to an open database: the folder beside its file."""

from __future__ import annotations

from pathlib import Path

import duckdb

from capsel.db import one_row
from capsel.image_store.store import image_store_dir


def database_image_root(con: duckdb.DuckDBPyConnection) -> Path | None:
    """`<db folder>/<db stem>.images` of the connection's database; None for a database in memory."""
    (database_file,) = one_row(con, "db/database_file")
    return None if database_file is None else image_store_dir(database_file)
