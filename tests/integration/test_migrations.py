"""Schema migrations on real DuckDB files: create, upgrade, refuse newer."""

import duckdb
import pytest

from capsel.db import open_db, run_sql, sql_text
from capsel.db.migrations import available_migrations, latest_version
from capsel.errors import CapselError, SchemaVersionError


def test_new_file_gets_latest_schema(tmp_path):
    path = tmp_path / "capsel.duckdb"
    con = open_db(path)
    assert run_sql(con, "db/schema_version_current").fetchone()[0] == latest_version()
    tables = {row[0] for row in con.execute("select table_name from information_schema.tables").fetchall()}
    assert {"candidates", "sources", "quarantine", "generations", "divergences", "selections", "runs"} <= tables
    con.close()


def test_old_database_is_upgraded(tmp_path):
    path = tmp_path / "old.duckdb"
    first = available_migrations()[0]
    raw = duckdb.connect(str(path))
    run_sql(raw, "db/schema_version_create")
    raw.execute(sql_text(first.sql_name))
    run_sql(raw, "db/schema_version_record", {"version": 1, "name": first.name})
    raw.close()
    con = open_db(path)
    assert run_sql(con, "db/schema_version_current").fetchone()[0] == latest_version()
    con.close()
    # reopening is a no-op, not a second application
    open_db(path).close()


def test_newer_database_is_refused_with_clear_message(tmp_path):
    path = tmp_path / "future.duckdb"
    open_db(path).close()
    raw = duckdb.connect(str(path))
    run_sql(raw, "db/schema_version_record", {"version": latest_version() + 5, "name": "future"})
    raw.close()
    with pytest.raises(SchemaVersionError, match="upgrade capsel"):
        open_db(path)
    with pytest.raises(SchemaVersionError):
        open_db(path, read_only=True)


def test_read_only_open_of_missing_file_is_clear(tmp_path):
    with pytest.raises(CapselError, match="no capsel database"):
        open_db(tmp_path / "missing.duckdb", read_only=True)


def test_memory_limit_is_applied_to_the_connection(tmp_path):
    con = open_db(tmp_path / "capped.duckdb", memory_limit="300MB")
    limit = con.execute("select current_setting('memory_limit')").fetchone()[0]
    con.close()
    assert limit.endswith("MiB") and 280 <= float(limit.split()[0]) <= 300


def test_selections_recorded_before_the_status_column_stay_published(tmp_path):
    path = tmp_path / "v4.duckdb"
    raw = duckdb.connect(str(path))
    run_sql(raw, "db/schema_version_create")
    for migration in available_migrations()[:4]:
        raw.execute(sql_text(migration.sql_name))
        run_sql(raw, "db/schema_version_record", {"version": migration.version, "name": migration.name})
    raw.execute("insert into selections (selection_id, method, budget, budget_mode, out_dir, n_members) "
                "values ('sel-old', 'cap', '5', 'per_domain', '/elsewhere/sel-old', 5)")
    raw.close()
    con = open_db(path)
    try:
        assert con.execute("select selection_id, status from selections").fetchall() == [("sel-old", "published")]
        assert [row[0] for row in run_sql(con, "publish/selections_list").fetchall()] == ["sel-old"]
    finally:
        con.close()
