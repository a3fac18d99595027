"""`capsel lineage`: the full chain behind a candidate or a published selection."""

from __future__ import annotations

from typing import Annotated

import orjson
import typer

from capsel.cli.common import DbOption, console, settings_for
from capsel.db import open_db
from capsel.lineage import trace
from capsel.lineage.render import lineage_tree


def lineage(
    identifier: Annotated[str, typer.Argument(help="A candidate id or a selection id.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the lineage as JSON instead of a tree.")] = False,
    db: DbOption = None,
) -> None:
    """Where a candidate came from (source, row, runs, model, config, scores, selections), or a selection's basis."""
    settings = settings_for(db)
    con = open_db(settings.db_path, read_only=True)
    try:
        found = trace(con, identifier)
    finally:
        con.close()
    if as_json:
        print(orjson.dumps(found.__dict__, default=str, option=orjson.OPT_INDENT_2).decode())
    else:
        console.print(lineage_tree(found))
