"""DuckDB store: connections, schema migrations and the SQL-file runner."""

from capsel.db.connection import open_db
from capsel.db.sqlfiles import run_sql, sql_text

__all__ = ["open_db", "run_sql", "sql_text"]
