"""`capsel export-scores`: one row per scored candidate to Parquet or JSON Lines."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from capsel.cli.common import DbOption, console, settings_for
from capsel.cli.scoring_options import DomainOption
from capsel.db import open_db
from capsel.paths import inside_root
from capsel.scoring.export import export_scores as write_scores
from capsel.scoring.export import latest_score_keys


def export_scores(
    out: Annotated[Path, typer.Option("--out", help="FILE.parquet or FILE.jsonl, inside the output root.")],
    model_fingerprint: Annotated[Optional[str], typer.Option(
        "--model-fingerprint", help="Which model's scores (default: the most recently scored).",
        show_default=False)] = None,
    config_hash: Annotated[Optional[str], typer.Option(
        "--config-hash", help="Which scoring config (default: the most recently scored).",
        show_default=False)] = None,
    domain: DomainOption = None,
    db: DbOption = None,
) -> None:
    """Export candidate, exclusion, D_early, D_late, the D_l profile, PPL (and CAP, z once selected)."""
    settings = settings_for(db)
    target = inside_root(settings.output_root, out)
    con = open_db(settings.db_path, read_only=True)
    try:
        if model_fingerprint is None or config_hash is None:
            latest_model, latest_config = latest_score_keys(con)
            model_fingerprint = model_fingerprint or latest_model
            config_hash = config_hash or latest_config
        n_rows = write_scores(con, target, model_fingerprint, config_hash, domain)
    finally:
        con.close()
    console.print(f"wrote {n_rows} rows to {target} (model {model_fingerprint}, config {config_hash})")
