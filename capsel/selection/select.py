"""The members of a selection: what the method's selector picks from its scores, with the lineage of each."""

from __future__ import annotations

from typing import Sequence

import duckdb
import pandas as pd

from capsel.errors import CapselError
from capsel.methods.method import load_object
from capsel.methods.registry import method
from capsel.methods.selectors import Order
from capsel.selection.budget import Quota
from capsel.selection.lineage import member_lineage
from capsel.selection.params import SelectionParams
from capsel.selection.scoring_key import ScoringKey


def selection_rule(name: str, order: Order | None = None) -> str:
    """How method `name` picks its members, in words (for the manifest and dataset card)."""
    return method(name).selector.rule(name, order)


def select_members(
    con: duckdb.DuckDBPyConnection, asked: SelectionParams, quotas: Sequence[Quota], key: ScoringKey | None,
) -> pd.DataFrame:
    """Members ordered by domain and rank, with scores, text and lineage columns.

    Every method reads the scores of the method it is `scored_by` (its own; random reads CAP's, and draws from
    all candidates when `key` is None). The selector reads what it needs of `asked`: the seed, the order (PPL's
    direction, else the selector's own) and the PPL guards (over CAP's pool: `ppl_guard` leaves out the
    candidates above that percentile of PPL in their domain, `ppl_guard_z` those above that robust z of log PPL).
    `score` is CAP for cap and random and the method's own score otherwise (for k-center, a pick's distance to
    the earlier picks).
    """
    name = asked.method
    declared = method(name)
    if (key is None and declared.scores_of is None) or (key is not None and key.method != declared.scored_by):
        raise CapselError(f"{name} selection needs {declared.scored_by} scores: score the pool first")
    pick = load_object(declared.selector.pick)
    ranked = pick(con, quotas, key, asked, declared.selector)
    lineage = member_lineage(con, ranked["candidate_id"].tolist(), key)
    return ranked.merge(lineage, on="candidate_id", how="left", validate="one_to_one")
