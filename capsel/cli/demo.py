"""`capsel demo`: the pipeline as far as it goes today, on the bundled sample pool.

Ingests capsel/data/sample_pool (duplicates and bad rows of every kind included) into a
fresh database under the output root, then prints `capsel status`. Later stages extend it.
"""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path
from typing import Annotated, Optional

import typer

from capsel.cli.common import console, settings_for
from capsel.cli.ingest import print_report
from capsel.cli.status import status
from capsel.db import open_db
from capsel.ingest.pipeline import IngestOptions, ingest
from capsel.ingest.records import parse_field_map
from capsel.paths import inside_root

DEMO_DB = "demo/capsel.duckdb"


def sample_pool() -> tuple[Path, dict]:
    """Folder of the bundled sample pool and its manifest (which options each file needs)."""
    folder = Path(str(files("capsel.data").joinpath("sample_pool")))
    return folder, json.loads((folder / "manifest.json").read_text())


def demo(
    out: Annotated[Optional[Path], typer.Option(
        "--out", help="Output root for the demo database (default: $CAPSEL_OUTPUT_ROOT).", show_default=False,
    )] = None,
) -> None:
    """Run the demo on the bundled sample pool, starting from a fresh database each time."""
    settings = settings_for(None, output_root=out)
    db_path = inside_root(settings.output_root, DEMO_DB)
    for stale in (db_path, db_path.with_name(db_path.name + ".wal")):
        stale.unlink(missing_ok=True)
    folder, manifest = sample_pool()
    con = open_db(db_path)
    try:
        for entry in manifest["files"]:
            options = IngestOptions(
                domain=entry.get("domain"),
                fields=parse_field_map([entry["map"]] if "map" in entry else []),
                max_field_chars=manifest["max_field_chars"],
                workers=0,
            )
            console.rule(f"capsel ingest {entry['file']}")
            print_report(ingest(con, [folder / entry["file"]], options))
    finally:
        con.close()
    console.rule("capsel status")
    status(db_path)
