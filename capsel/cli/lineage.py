"""`capsel lineage`: the full chain behind a candidate or a published selection."""

from __future__ import annotations

from typing import Annotated

import typer

from capsel.cli.common import DbOption, JsonOption, console, json_output, read_store, settings_for


def lineage(
    identifier: Annotated[str, typer.Argument(help="A candidate id or a selection id.")],
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Where a candidate came from (source, row, runs, model, config, scores, selections), or a selection's basis."""
    from capsel.lineage import trace  # duckdb: not for --help
    from capsel.lineage.render import lineage_tree

    with read_store(settings_for(db).db_path) as con:
        found = trace(con, identifier)
    with json_output(json_out) as output:
        output.emit(found.__dict__)
        console.print(lineage_tree(found))
