"""The members of a selection: top-k by CAP z or a baseline's score, k-center coverage, or the seeded random draw."""

from __future__ import annotations

from typing import Sequence

import duckdb
import pandas as pd

from capsel.baselines.registry import BASELINES, Order
from capsel.db import run_sql
from capsel.errors import CapselError, OptionError
from capsel.selection.budget import Quota
from capsel.selection.coverage import RULE as COVERAGE_RULE
from capsel.selection.coverage import select_coverage
from capsel.selection.lineage import member_lineage
from capsel.selection.scoring_key import ScoringKey, layer_params

Method = str
METHODS: tuple[str, ...] = ("cap", "random", *BASELINES)
ORDER_RULES = {
    "high": "highest score first per domain; ties by candidate_id",
    "low": "lowest score first per domain; ties by candidate_id",
    "middle": "nearest the domain's median score rank first (the middle band); ties by candidate_id",
}


def selection_rule(method: Method, order: Order | None = None) -> str:
    """How `method` picks its members, in words (for the manifest and dataset card)."""
    if method == "cap":
        return ("CAP = D_late - (alpha + beta * D_early), fit by OLS per domain; z standardises CAP within the "
                "domain; the highest z are taken, ties by candidate id")
    if method == "random":
        return "seeded random draw per domain: md5(seed:candidate_id) order"
    if BASELINES[method].selects_by == "coverage":
        return COVERAGE_RULE
    return f"{method}: {ORDER_RULES[order or BASELINES[method].order]}"


def select_members(
    con: duckdb.DuckDBPyConnection,
    method: Method,
    quotas: Sequence[Quota],
    key: ScoringKey | None,
    seed: int = 0,
    order: Order | None = None,
    ppl_guard: float | None = None,
    ppl_guard_z: float | None = None,
) -> pd.DataFrame:
    """Members ordered by domain and rank, with scores, text and lineage columns.

    `cap` and the baselines need a scoring key of their method; `random` draws from the key's
    eligible pool, or from all candidates when `key` is None. `order` overrides a score
    baseline's default order (PPL's direction). `score` is CAP for cap and the method's own score
    otherwise (for k-center, a pick's distance to the earlier picks). `ppl_guard` (cap, and random from
    CAP's pool) leaves out the candidates above that percentile of PPL in their domain, `ppl_guard_z` those above
    that robust z of log PPL.
    """
    quota_rows = [{"domain": quota.domain, "k": quota.k} for quota in quotas]
    if method not in METHODS:
        raise OptionError(f"unknown selection method {method!r}; choose one of {', '.join(METHODS)}")
    if method != "random" and (key is None or key.method != method):
        raise CapselError(f"{method} selection needs {method} scores: score the pool first")
    if method == "random":
        ranked = run_sql(con, "selection/select_random", {
            "quotas": quota_rows,
            "use_scores": key is not None,
            "model_fingerprint": key.model_fingerprint if key else None,
            "config_hash": key.config_hash if key else None,
            "seed": int(seed),
            "ppl_guard": ppl_guard,
            "ppl_guard_z": ppl_guard_z,
            **layer_params(key),
        }).df()
        ranked["score"] = ranked["cap"]
        return _with_lineage(con, ranked, key)
    assert key is not None  # every method but random reads its own scores (checked above)
    if method == "cap":
        ranked = run_sql(con, "selection/select_top", {
            "quotas": quota_rows,
            "model_fingerprint": key.model_fingerprint,
            "config_hash": key.config_hash,
            "ppl_guard": ppl_guard,
            "ppl_guard_z": ppl_guard_z,
            **key.layer_params(),
        }).df()
        ranked["score"] = ranked["cap"]
    elif BASELINES[method].selects_by == "coverage":
        ranked = select_coverage(con, quotas, key)
    else:
        ranked = run_sql(con, "selection/select_by_score", {
            "quotas": quota_rows,
            "method": method,
            "model_fingerprint": key.model_fingerprint,
            "config_hash": key.config_hash,
            "order": order or BASELINES[method].order,
        }).df()
    return _with_lineage(con, ranked, key)


def _with_lineage(con: duckdb.DuckDBPyConnection, ranked: pd.DataFrame, key: ScoringKey | None) -> pd.DataFrame:
    lineage = member_lineage(con, ranked["candidate_id"].tolist(), key)
    return ranked.merge(lineage, on="candidate_id", how="left", validate="one_to_one")
