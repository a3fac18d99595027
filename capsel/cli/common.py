"""Options and helpers shared by every CLI command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from capsel.config import Settings, load_settings

console = Console()
err_console = Console(stderr=True)

DbOption = Annotated[
    Optional[Path],
    typer.Option("--db", help="DuckDB file (default: $CAPSEL_DB_PATH or ./capsel.duckdb).", show_default=False),
]


def settings_for(db: Path | None = None, **overrides: object) -> Settings:
    """Settings with the command's explicit options applied on top of env and .env."""
    return load_settings(db_path=db, **overrides)
