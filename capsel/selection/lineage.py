"""Text and lineage of candidates: source file, quarantine hits, exclusion by the scoring engine."""

from __future__ import annotations

from typing import Sequence

import duckdb
import pandas as pd

from capsel.db import run_sql
from capsel.methods.registry import DEFAULT_METHOD
from capsel.selection.scoring_key import ScoringKey


def member_lineage(
    con: duckdb.DuckDBPyConnection, candidate_ids: Sequence[str], key: ScoringKey | None
) -> pd.DataFrame:
    """One row per distinct id: instruction/input/response, source, is_quarantined, excluded_reason."""
    return run_sql(con, "selection/member_lineage", {
        "candidate_ids": list(candidate_ids),
        "method": key.method if key else DEFAULT_METHOD,
        "model_fingerprint": key.model_fingerprint if key else None,
        "config_hash": key.config_hash if key else None,
    }).df()
