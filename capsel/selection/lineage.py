"""Text and lineage of candidates: source file, quarantine hits, exclusion by the scoring engine."""

from __future__ import annotations

from typing import Sequence

import duckdb
import pandas as pd

from capsel.db.sqlfiles import sql_text
from capsel.methods.registry import DEFAULT_METHOD
from capsel.selection.scoring_key import ScoringKey


def member_lineage(
    con: duckdb.DuckDBPyConnection,
    candidate_ids: Sequence[str],
    key: ScoringKey | None,
    columns: Sequence[str] | None = None,
) -> pd.DataFrame:
    """One row per distinct id: instruction/input/response, source, is_quarantined, excluded_reason.

    `columns` keeps only those (candidate_id first, say): DuckDB then reads no text it is not asked for,
    which at a million members is most of the query's time.
    """
    # on `con`, not sql_relation's cursor: the gate's re-read must see what the caller's transaction wrote too
    lineage = con.sql(sql_text("selection/member_lineage"), params={
        "candidate_ids": list(candidate_ids),
        "method": key.method if key else DEFAULT_METHOD,
        "model_fingerprint": key.model_fingerprint if key else None,
        "config_hash": key.config_hash if key else None,
    })
    return (lineage.select(*columns) if columns else lineage).df()
