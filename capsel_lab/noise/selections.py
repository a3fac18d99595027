"""Each method's real selection on a scored lab pool, and how much junk of each kind it takes.

The selections are built by the selection library itself (`build_selection`), exactly as
`capsel select` builds them: CAP top z, CAP top z under the PPL guard, PPL high first (the PPL
baseline, its values taken from CAP's stored PPL where CAP measured one) and the seeded random control.
"""

from __future__ import annotations

import duckdb
import pandas as pd

from capsel.cap_engine.config import ScoringConfig
from capsel.config import load_settings
from capsel.db.records import fetch_records
from capsel.methods.ppl import PplSpec
from capsel.methods.ppl.scorer import PplConfig, PplScorer
from capsel.methods.spec import ModelSpec
from capsel.models.loading import ModelInfo
from capsel.selection.params import SelectionParams
from capsel.selection.plan import build_selection
from capsel.selection.scoring_key import ScoringKey, resolve_scoring_key
from capsel.stages.context import RunContext
from capsel.stages.score import ScoreRequest, score
from capsel_lab.noise.methods import CLEAN_LABELS
from capsel_lab.noise.stats import junk_kind

SELECTION_METHODS = ("cap", "cap_guard", "ppl", "random")


def guarded_ids(con: duckdb.DuckDBPyConnection, key: ScoringKey, ppl_guard: float) -> set[str]:
    """Candidates the PPL guard holds back from CAP's pool (the same rule `capsel select --ppl-guard` uses)."""
    rows = fetch_records(con, "selection/ppl_guarded_candidates", {
        "model_fingerprint": key.model_fingerprint, "config_hash": key.config_hash, "ppl_guard": ppl_guard,
        "ppl_guard_z": None,
    })
    return {row["candidate_id"] for row in rows}


def ppl_key(con: duckdb.DuckDBPyConnection, info: ModelInfo, config: ScoringConfig, batch_size: int) -> ScoringKey:
    """Score the PPL baseline with CAP's limits and prompt format (reusing CAP's PPL) and return its key."""
    scorer = PplScorer(PplConfig(prompt_tokens=config.prompt_tokens, horizon=config.horizon,
                                 min_prompt_tokens=config.min_prompt_tokens,
                                 min_response_tokens=config.min_response_tokens,
                                 prompt_format=config.prompt_format), info, batch_size)
    spec = PplSpec(model=ModelSpec(path=info.source.name_or_path, prompt_format=config.prompt_format),
                   prompt_tokens=config.prompt_tokens, horizon=config.horizon, batch_size=batch_size)
    score(ScoreRequest(spec, scorer=scorer), RunContext(con, load_settings(), run_config={"lab": True}))
    return resolve_scoring_key(con, info.fingerprint, scorer.config.hash, method="ppl")


def junk_in_selections(
    con: duckdb.DuckDBPyConnection, cap: ScoringKey, ppl: ScoringKey, labels: pd.DataFrame,
    budget: str = "10%", ppl_guard: float = 95.0, seed: int = 0,
) -> dict:
    """Per method: members, junk members by kind and clean members, for a per-domain `budget`."""
    requests = {
        "cap": (SelectionParams(budget=budget, method="cap"), cap),
        "cap_guard": (SelectionParams(budget=budget, method="cap", ppl_guard=ppl_guard), cap),
        "ppl": (SelectionParams(budget=budget, method="ppl"), ppl),
        "random": (SelectionParams(budget=budget, method="random", seed=seed), cap),
    }
    out = {}
    for method, (request, key) in requests.items():
        members = build_selection(con, request, key).members[["candidate_id"]].merge(
            labels, on="candidate_id", how="left", validate="one_to_one")
        junk = members[members["lab_label"] == "junk"]
        out[method] = {
            "n_members": int(len(members)),
            "n_junk": int(len(junk)),
            "junk_by_kind": {kind: int(count) for kind, count in junk_kind(junk).value_counts().sort_index().items()},
            "n_clean": int(members["lab_label"].isin(CLEAN_LABELS).sum()),
        }
    return {"budget": budget, "ppl_guard": ppl_guard, "methods": out}
