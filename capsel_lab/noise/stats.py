"""Where junk ranks among clean candidates: percentiles, tail shares, and label separation."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

from capsel_lab.noise.methods import CLEAN_LABELS, METHOD_COLUMNS

if TYPE_CHECKING:  # the tables arrive as DataFrames; `capsel demo --help` names this module without them
    import pandas as pd

TAILS = (1, 5, 10)


def percentiles_among(values: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Percentile of each value within `reference`: 100 x (share below + half the share tied)."""
    ordered = np.sort(np.asarray(reference, dtype=float))
    values = np.asarray(values, dtype=float)
    below = np.searchsorted(ordered, values, side="left")
    tied = np.searchsorted(ordered, values, side="right") - below
    return 100.0 * (below + 0.5 * tied) / len(ordered)


def auc(positive: np.ndarray, negative: np.ndarray) -> float:
    """P(a positive value exceeds a negative one), ties counting half; nan if either side is empty."""
    if len(positive) == 0 or len(negative) == 0:
        return float("nan")
    return float(np.mean(percentiles_among(positive, negative)) / 100.0)


@dataclass(frozen=True)
class JunkRanks:
    """How one method ranks the junk among the clean candidates (percentiles in 0..100)."""

    method: str
    n_clean: int
    n_junk: int
    median: float
    min: float
    max: float
    below_p1: float      # share of junk below the clean 1st percentile
    below_p5: float
    below_p10: float
    above_p95: float     # share of junk above the clean 95th percentile (where a top-5% selection reaches)
    above_all: float     # share of junk above every clean candidate

    def as_dict(self) -> dict:
        """Plain dict for JSON."""
        return asdict(self)


def junk_ranks(method: str, clean: np.ndarray, junk: np.ndarray) -> JunkRanks:
    """Percentile summary of `junk` within `clean` for one method."""
    clean, junk = np.asarray(clean, dtype=float), np.asarray(junk, dtype=float)
    if len(clean) == 0 or len(junk) == 0:
        nan = float("nan")
        return JunkRanks(method, len(clean), len(junk), nan, nan, nan, nan, nan, nan, nan, nan)
    pct = percentiles_among(junk, clean)
    # "inverted_cdf" keeps the cuts on actual clean values, so -inf (guarded) clean rows stay comparable
    cuts = np.percentile(clean, TAILS, method="inverted_cdf")
    below_p1, below_p5, below_p10 = (float(np.mean(junk < cut)) for cut in cuts)
    above_p95 = float(np.mean(junk > np.percentile(clean, 95, method="inverted_cdf")))
    return JunkRanks(method, len(clean), len(junk), float(np.median(pct)), float(pct.min()), float(pct.max()),
                     below_p1, below_p5, below_p10, above_p95, float(np.mean(junk > clean.max())))


def eligible_split(scores: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(clean, junk) rows among the candidates the engine scored without exclusion."""
    eligible = scores[scores["excluded_reason"].isna()]
    return eligible[eligible["lab_label"].isin(CLEAN_LABELS)], eligible[eligible["lab_label"] == "junk"]


def junk_kind(scores: pd.DataFrame) -> pd.Series:
    """The junk kind of each row: "salad" or "shuffled" (lab_detail is "shuffled:<source lab_id>")."""
    return scores["lab_detail"].fillna("").str.split(":").str[0]


def method_ranks(clean: pd.DataFrame, junk: pd.DataFrame) -> dict[str, dict]:
    """Junk ranks under every method whose column the scores carry."""
    return {method: junk_ranks(method, clean[column], junk[column]).as_dict()
            for method, column in METHOD_COLUMNS.items() if column in clean.columns}


def junk_table(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per eligible junk candidate: its scores and its percentile among clean ones per method."""
    clean, junk = eligible_split(scores)
    columns = [column for column in METHOD_COLUMNS.values() if column in scores.columns]
    table = junk[["candidate_id", "domain", "lab_detail", *dict.fromkeys(columns)]].copy()
    for method, column in METHOD_COLUMNS.items():
        if column in scores.columns:
            table[f"{method}_pct"] = percentiles_among(junk[column].to_numpy(), clean[column].to_numpy())
    return table.sort_values(["domain", "candidate_id"]).reset_index(drop=True)


def label_summary(scores: pd.DataFrame) -> dict:
    """Per ground-truth label: candidates, engine exclusions (count and share), mean CAP z and median PPL."""
    out = {}
    for label, rows in scores.groupby("lab_label"):
        eligible = rows[rows["excluded_reason"].isna()]
        out[label] = {
            "n": int(len(rows)), "n_excluded": int(len(rows) - len(eligible)),
            "excluded_share": float((len(rows) - len(eligible)) / len(rows)) if len(rows) else None,
            "mean_z": float(eligible["z"].mean()) if len(eligible) else None,
            "median_ppl": float(eligible["ppl"].median()) if len(eligible) else None,
        }
    return out


def noise_summary(scores: pd.DataFrame) -> dict:
    """Everything the experiment reports, JSON-ready: pooled, per-domain and per-kind junk ranks, labels, AUC."""
    clean, junk = eligible_split(scores)
    per_domain = {
        domain: method_ranks(clean[clean["domain"] == domain], junk[junk["domain"] == domain])
        for domain in sorted(scores["domain"].unique())
    }
    kinds = junk_kind(junk)
    per_kind = {kind: method_ranks(clean, junk[kinds == kind]) for kind in sorted(kinds.unique())}
    z = {label: clean.loc[clean["lab_label"] == label, "z"].to_numpy() for label in ("known", "learnable")}
    excluded = scores[scores["excluded_reason"].notna()]
    return {
        "pooled": method_ranks(clean, junk),
        "per_domain": per_domain,
        "per_junk_kind": per_kind,
        "labels": label_summary(scores),
        "excluded": {f"{label}/{reason}": int(count) for (label, reason), count in
                     excluded.groupby(["lab_label", "excluded_reason"]).size().items()},
        "auc_learnable_over_known": auc(z["learnable"], z["known"]),
    }


def guard_cost(scores: pd.DataFrame, guarded: pd.Series, ppl_guard: float) -> dict:
    """What the PPL guard holds back of the eligible clean and junk candidates (counts and shares)."""
    clean, junk = eligible_split(scores)
    out: dict = {"ppl_guard": ppl_guard}
    for name, rows in (("clean", clean), ("junk", junk)):
        held = int(guarded.loc[rows.index].sum())
        out[name] = {"eligible": int(len(rows)), "held_back": held,
                     "share_held_back": held / len(rows) if len(rows) else None}
    return out
