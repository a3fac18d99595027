"""Every scored method on the pool, its selection under one budget, its scores and its members' PPL."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import duckdb
import pandas as pd

from capsel.db import run_sql
from capsel.errors import CapselError
from capsel.methods.registry import CONTROL_METHOD, method, scored_methods
from capsel.methods.selectors import Order
from capsel.selection.budget import Budget
from capsel.selection.params import SelectionParams
from capsel.selection.plan import Selection, build_selection
from capsel.selection.scoring_key import ScoringKey, scored_pairs


@dataclass
class Contender:
    """One method's selection, and its per-candidate scores when it ranks by a score."""

    label: str
    key: ScoringKey | None
    selection: Selection
    scores: pd.DataFrame | None

    @property
    def member_ids(self) -> set[str]:
        """Ids of the selected candidates."""
        return set(self.selection.members["candidate_id"])


@dataclass
class Comparison:
    """Every contender plus what could not be compared, and the PPL each candidate has (if any was measured).

    `image_ids` are the pool's candidates that hold images (none in a text pool).
    """

    contenders: list[Contender]
    ppl: pd.Series | None
    ppl_source: str | None
    notes: list[str] = field(default_factory=list)
    image_ids: frozenset[str] = frozenset()


def scored_keys(con: duckdb.DuckDBPyConnection) -> list[ScoringKey]:
    """Every (method, scorer, config) with results, in registry order (CAP first)."""
    return [key for scored in scored_methods() for key in scored_pairs(con, scored.name)]


def gather(con: duckdb.DuckDBPyConnection, budget: Budget, seed: int = 0, ppl_order: Order = "high") -> Comparison:
    """Select with every scored method and with the seeded random control (over all candidates)."""
    keys = scored_keys(con)
    if not keys:
        raise CapselError("nothing is scored yet: run `capsel score` or `capsel score-baseline` first")
    per_method = {key.method: sum(other.method == key.method for other in keys) for key in keys}
    contenders, notes = [], []
    for key in [*keys, None]:
        name = key.method if key else CONTROL_METHOD
        label = name if key is None or per_method[name] == 1 else \
            f"{name}:{key.model_fingerprint[:6]}/{key.config_hash[:6]}"
        order = ppl_order if method(name).ppl == "scores" else None
        request = SelectionParams(budget=budget.text, total=budget.mode == "total", method=name, seed=seed, order=order)
        try:
            selection = build_selection(con, request, key)
        except CapselError as exc:
            notes.append(f"{label}: left out ({exc})")
            continue
        notes += [f"{label}: {note}" for note in selection.notes]
        contenders.append(Contender(label, key, selection, _scores(con, key)))
    ppl, source = _ppl(con, keys)
    if ppl is None:
        notes.append("no PPL measured (score ppl, or CAP): PPL distributions are left out")
    image_ids = frozenset(run_sql(con, "compare/compare_image_candidates").df()["candidate_id"])
    if image_ids:
        notes.append(f"{len(image_ids)} candidates hold images: the methods that read text alone excluded them "
                     "(their selections' excluded rows say why); `with images` counts the members that hold one")
    return Comparison(contenders, ppl, source, notes, image_ids)


def _scores(con: duckdb.DuckDBPyConnection, key: ScoringKey | None) -> pd.DataFrame | None:
    if key is None:
        return None
    scored = method(key.method)
    if not (scored.residualized or scored.selector.ranks_by_score):
        return None
    return run_sql(con, "compare/compare_scores", {
        "method": key.method, "residualized": scored.residualized, "model_fingerprint": key.model_fingerprint,
        "config_hash": key.config_hash,
    }).df()


def _ppl(con: duckdb.DuckDBPyConnection, keys: list[ScoringKey]) -> tuple[pd.Series | None, str | None]:
    """PPL by candidate id: the ppl baseline's when scored, else what CAP scoring measured."""
    for key in keys:
        if method(key.method).ppl == "scores":
            frame: Any = _scores(con, key)
            return frame.set_index("candidate_id")["score"], f"ppl scores of {key.model_fingerprint}"
    for key in keys:
        if method(key.method).ppl == "measured":
            frame = run_sql(con, "compare/compare_cap_ppl", {
                "model_fingerprint": key.model_fingerprint, "config_hash": key.config_hash,
            }).df()
            return frame.set_index("candidate_id")["score"], f"PPL measured by CAP scoring with {key.model_fingerprint}"
    return None, None
