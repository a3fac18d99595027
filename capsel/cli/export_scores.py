"""`capsel export-scores`: one row per scored candidate to Parquet or JSON Lines."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from capsel.cli.common import DbOption, JsonOption, console, json_output, read_store, settings_for
from capsel.cli.scoring_options import DomainOption
from capsel.paths import typed_path
from capsel.terminal_text import markup


def export_scores(
    out: Annotated[Path, typer.Option("--out", metavar="FILE", help="FILE.parquet or FILE.jsonl.")],
    model: Annotated[Optional[str], typer.Option(
        "--model", help="Model fingerprint or name/path (default: the only scored model).",
        show_default=False)] = None,
    config_hash: Annotated[Optional[str], typer.Option(
        "--config-hash", help="Scoring config hash (default: the only scored config).", show_default=False)] = None,
    domain: DomainOption = None,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Export candidate, exclusion, n_aligned, D_early, D_late, the D_l profile, PPL, CAP and z."""
    from capsel.cap_engine.export import export_scores as write_scores  # pyarrow, duckdb: not for --help
    from capsel.selection.scoring_key import resolve_scoring_key

    target = typed_path(out)
    with read_store(settings_for(db).db_path) as con:
        key = resolve_scoring_key(con, model, config_hash)
        n_rows = write_scores(con, target, key.model_fingerprint, key.config_hash, domain)
    with json_output(json_out) as output:
        output.emit({"path": target, "n_rows": n_rows, "model_fingerprint": key.model_fingerprint,
                     "config_hash": key.config_hash, "domain": domain})
        console.print(markup("wrote {} rows to {} ({})", n_rows, target, key.describe()))
