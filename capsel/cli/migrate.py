"""`capsel migrate`: upgrade a database written by an older capsel."""

from __future__ import annotations

from capsel.cli.common import DbOption, console, settings_for
from capsel.cli.wrapping import print_unbroken
from capsel.terminal_text import markup


def migrate(db: DbOption = None) -> None:
    """Create the database or upgrade its schema to this capsel's version."""
    from capsel.db import open_db  # duckdb: not for --help
    from capsel.db.migrations import latest_version

    settings = settings_for(db)
    open_db(settings.db_path).close()
    print_unbroken(console, markup("{}: schema version {}", settings.db_path, latest_version()))
