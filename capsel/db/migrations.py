"""Versioned schema: sql/migrations/NNN_*.sql applied in order, recorded in schema_version."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.resources import files

import duckdb

from capsel.db.sqlfiles import one_row, run_sql, sql_text
from capsel.db.transaction import transaction
from capsel.errors import SchemaVersionError

_MIGRATION_NAME = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    """One schema step: its version number and the SQL file that applies it."""

    version: int
    name: str

    @property
    def sql_name(self) -> str:
        return f"migrations/{self.version:03d}_{self.name}"


def available_migrations() -> list[Migration]:
    """Migrations shipped with this capsel, in version order."""
    found = []
    for entry in files("capsel.sql").joinpath("migrations").iterdir():
        match = _MIGRATION_NAME.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), match.group(2)))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise RuntimeError(f"migration versions must be 1..N without gaps, found {versions}")
    return found


def latest_version() -> int:
    """Schema version this capsel writes."""
    return len(available_migrations())


def current_version(con: duckdb.DuckDBPyConnection) -> int:
    """Schema version stored in the database (0 for an empty file)."""
    run_sql(con, "db/schema_version_create")
    return int(one_row(con, "db/schema_version_current")[0])


def check_not_newer(version: int, path: str) -> None:
    """Refuse a database written by a newer capsel: its schema may hold things we would break."""
    latest = latest_version()
    if version > latest:
        raise SchemaVersionError(
            f"{path} has schema version {version}, but this capsel supports up to {latest}; "
            "upgrade capsel (pip install -U capsel) to open it"
        )


def migrate(con: duckdb.DuckDBPyConnection, path: str) -> int:
    """Bring the schema up to date; each migration commits atomically with its version row."""
    version = current_version(con)
    check_not_newer(version, path)
    for migration in available_migrations():
        if migration.version <= version:
            continue
        with transaction(con):
            con.execute(sql_text(migration.sql_name))
            run_sql(con, "db/schema_version_record", {"version": migration.version, "name": migration.name})
        version = migration.version
    return version
