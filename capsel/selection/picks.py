"""What the built-in selectors (capsel.methods.selectors) run: each picks the ranked members of every domain."""

from __future__ import annotations

from typing import Sequence

import duckdb
import pandas as pd

from capsel.db import run_sql
from capsel.methods.selectors import TopScore
from capsel.selection.budget import Quota
from capsel.selection.coverage import select_coverage
from capsel.selection.params import SelectionParams
from capsel.selection.pinned_scores import pinned_cap_scores
from capsel.selection.scoring_key import ScoringKey, layer_params


def _quota_rows(quotas: Sequence[Quota]) -> list[dict]:
    return [{"domain": quota.domain, "k": quota.k} for quota in quotas]


def top_residual_z(con: duckdb.DuckDBPyConnection, quotas: Sequence[Quota], key: ScoringKey | None,
                   asked: SelectionParams, selector: object) -> pd.DataFrame:
    """The highest z of CAP's per-domain residual; `score` is CAP."""
    assert key is not None  # selection needs the method's own scores before it gets here
    return _cap_pool_ranked(con, quotas, key, asked, seed=None)


def seeded_draw(con: duckdb.DuckDBPyConnection, quotas: Sequence[Quota], key: ScoringKey | None, asked: SelectionParams,
                selector: object) -> pd.DataFrame:
    """md5(seed:candidate_id) order per domain over the key's eligible pool (every candidate when `key` is None)."""
    return _cap_pool_ranked(con, quotas, key, asked, seed=int(asked.seed))


def _cap_pool_ranked(con: duckdb.DuckDBPyConnection, quotas: Sequence[Quota], key: ScoringKey | None,
                     asked: SelectionParams, seed: int | None) -> pd.DataFrame:
    """sql/selection/select_cap_pool.sql's members: by z, or in the seed's order; `score` is CAP."""
    with pinned_cap_scores(con, key):
        ranked = run_sql(con, "selection/select_cap_pool", {
            "quotas": _quota_rows(quotas), "use_scores": key is not None,
            "model_fingerprint": key.model_fingerprint if key else None,
            "config_hash": key.config_hash if key else None, "seed": seed,
            "ppl_guard": asked.ppl_guard, "ppl_guard_z": asked.ppl_guard_z, **layer_params(key),
        }).df()
    ranked["score"] = ranked["cap"]
    return ranked


def top_score(con: duckdb.DuckDBPyConnection, quotas: Sequence[Quota], key: ScoringKey | None, asked: SelectionParams,
              selector: TopScore) -> pd.DataFrame:
    """Top-k by the key's stored method score, in the order asked or the selector's."""
    assert key is not None  # selection needs the method's own scores before it gets here
    return run_sql(con, "selection/select_by_score", {
        "quotas": _quota_rows(quotas), "method": key.method, "model_fingerprint": key.model_fingerprint,
        "config_hash": key.config_hash, "order": asked.order or selector.default_order,
    }).df()


def coverage(con: duckdb.DuckDBPyConnection, quotas: Sequence[Quota], key: ScoringKey | None, asked: SelectionParams,
             selector: object) -> pd.DataFrame:
    """Greedy k-center over each domain's stored embeddings."""
    assert key is not None  # selection needs the method's own scores before it gets here
    return select_coverage(con, quotas, key)
