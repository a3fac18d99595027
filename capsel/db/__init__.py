"""DuckDB store: connections, schema migrations, the SQL-file runner and the one transaction helper."""

from capsel.db.connection import open_db
from capsel.db.sqlfiles import first_row, one_row, run_sql, sql_text
from capsel.db.transaction import transaction

__all__ = ["first_row", "one_row", "open_db", "run_sql", "sql_text", "transaction"]
