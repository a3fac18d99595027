"""Where junk ranks among clean candidates: percentiles, tail shares, and label separation."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

CLEAN_LABELS = ("known", "learnable")
# Column each method ranks by; both pick the highest values first (PPL-top selection, CAP-top selection).
METHOD_COLUMNS = {"ppl": "ppl", "cap": "z"}
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
    above_all: float     # share of junk above every clean candidate

    def as_dict(self) -> dict:
        """Plain dict for JSON."""
        return asdict(self)


def junk_ranks(method: str, clean: np.ndarray, junk: np.ndarray) -> JunkRanks:
    """Percentile summary of `junk` within `clean` for one method."""
    clean, junk = np.asarray(clean, dtype=float), np.asarray(junk, dtype=float)
    if len(clean) == 0 or len(junk) == 0:
        nan = float("nan")
        return JunkRanks(method, len(clean), len(junk), nan, nan, nan, nan, nan, nan, nan)
    pct = percentiles_among(junk, clean)
    cuts = np.percentile(clean, TAILS)
    below = [float(np.mean(junk < cut)) for cut in cuts]
    return JunkRanks(method, len(clean), len(junk), float(np.median(pct)), float(pct.min()), float(pct.max()),
                     *below, float(np.mean(junk > clean.max())))


def eligible_split(scores: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(clean, junk) rows among the candidates the engine scored without exclusion."""
    eligible = scores[scores["excluded_reason"].isna()]
    return eligible[eligible["lab_label"].isin(CLEAN_LABELS)], eligible[eligible["lab_label"] == "junk"]


def junk_table(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per eligible junk candidate: its scores and its percentile among clean ones per method."""
    clean, junk = eligible_split(scores)
    table = junk[["candidate_id", "domain", "lab_detail", "ppl", "z"]].copy()
    for method, column in METHOD_COLUMNS.items():
        table[f"{method}_pct"] = percentiles_among(junk[column].to_numpy(), clean[column].to_numpy())
    return table.sort_values(["domain", "candidate_id"]).reset_index(drop=True)


def label_summary(scores: pd.DataFrame) -> dict:
    """Per ground-truth label: candidates, engine exclusions, mean CAP z and median PPL of the eligible."""
    out = {}
    for label, rows in scores.groupby("lab_label"):
        eligible = rows[rows["excluded_reason"].isna()]
        out[label] = {
            "n": int(len(rows)), "n_excluded": int(len(rows) - len(eligible)),
            "mean_z": float(eligible["z"].mean()) if len(eligible) else None,
            "median_ppl": float(eligible["ppl"].median()) if len(eligible) else None,
        }
    return out


def noise_summary(scores: pd.DataFrame) -> dict:
    """Everything the experiment reports, JSON-ready: pooled and per-domain junk ranks, labels, AUC."""
    clean, junk = eligible_split(scores)
    pooled = {m: junk_ranks(m, clean[c], junk[c]).as_dict() for m, c in METHOD_COLUMNS.items()}
    per_domain = {}
    for domain in sorted(scores["domain"].unique()):
        in_clean, in_junk = clean[clean["domain"] == domain], junk[junk["domain"] == domain]
        per_domain[domain] = {m: junk_ranks(m, in_clean[c], in_junk[c]).as_dict() for m, c in METHOD_COLUMNS.items()}
    kinds = junk["lab_detail"].str.split(":").str[0]  # "salad" or "shuffled:<source lab_id>"
    per_kind = {kind: {m: junk_ranks(m, clean[c], junk.loc[kinds == kind, c]).as_dict() for m, c in METHOD_COLUMNS.items()}
                for kind in sorted(kinds.unique())}
    z = {label: clean.loc[clean["lab_label"] == label, "z"].to_numpy() for label in CLEAN_LABELS}
    excluded = scores[scores["excluded_reason"].notna()]
    return {
        "pooled": pooled,
        "per_domain": per_domain,
        "per_junk_kind": per_kind,
        "labels": label_summary(scores),
        "excluded": {f"{label}/{reason}": int(count) for (label, reason), count in
                     excluded.groupby(["lab_label", "excluded_reason"]).size().items()},
        "auc_learnable_over_known": auc(z["learnable"], z["known"]),
    }
