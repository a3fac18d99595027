"""Reading one row of a SQL file leaves no unfinished result on the connection (DuckDB refuses `con.sql` then)."""

from __future__ import annotations

from capsel.db import first_row, one_row, open_db


def test_a_row_read_leaves_the_connection_free_for_a_relation(tmp_path):
    con = open_db(tmp_path / "capsel.duckdb")
    [version] = one_row(con, "db/schema_version_current")
    assert version == con.sql("select max(version) from schema_version").fetchall()[0][0] > 0
    assert first_row(con, "ingest/ingest_source_find", {"sha256": "0" * 64}) is None
    assert con.sql("select 42").fetchall() == [(42,)]
