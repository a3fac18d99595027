"""The members of a selection: top-k by CAP z per domain, or the seeded random control."""

from __future__ import annotations

from typing import Literal, Sequence

import duckdb
import pandas as pd

from capsel.db import run_sql
from capsel.errors import CapselError
from capsel.selection.budget import Quota
from capsel.selection.lineage import member_lineage
from capsel.selection.scoring_key import ScoringKey

Method = Literal["cap", "random"]
METHODS: tuple[str, ...] = ("cap", "random")


def select_members(
    con: duckdb.DuckDBPyConnection,
    method: Method,
    quotas: Sequence[Quota],
    key: ScoringKey | None,
    seed: int = 0,
) -> pd.DataFrame:
    """Members ordered by domain and rank, with scores, text and lineage columns.

    `cap` needs a scoring key; `random` draws from the key's eligible pool, or from all
    candidates when `key` is None.
    """
    quota_rows = [{"domain": quota.domain, "k": quota.k} for quota in quotas]
    if method == "cap":
        if key is None:
            raise CapselError("cap selection needs scores: run `capsel score` first")
        ranked = run_sql(con, "select_top", {
            "quotas": quota_rows,
            "model_fingerprint": key.model_fingerprint,
            "config_hash": key.config_hash,
        }).df()
    elif method == "random":
        ranked = run_sql(con, "select_random", {
            "quotas": quota_rows,
            "use_scores": key is not None,
            "model_fingerprint": key.model_fingerprint if key else None,
            "config_hash": key.config_hash if key else None,
            "seed": int(seed),
        }).df()
    else:
        raise CapselError(f"unknown selection method {method!r}; choose one of {', '.join(METHODS)}")
    lineage = member_lineage(con, ranked["candidate_id"].tolist(), key)
    return ranked.merge(lineage, on="candidate_id", how="left", validate="one_to_one")
