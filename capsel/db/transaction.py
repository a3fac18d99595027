"""All or nothing: the one transaction helper every writer uses (ingest, migrations, scoring, publish)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import duckdb


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Commit what the block wrote, or roll all of it back on any exception (Ctrl-C included)."""
    con.begin()
    try:
        yield
    except BaseException:
        con.rollback()
        raise
    con.commit()
