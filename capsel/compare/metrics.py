"""Numbers that compare selections: Jaccard overlap of member sets and Spearman correlation of scores."""

from __future__ import annotations

import warnings
from typing import Mapping

import numpy as np
import pandas as pd

ALL_DOMAINS = "all domains (mean)"


def jaccard(first: set, second: set) -> float:
    """|A ∩ B| / |A ∪ B| (1.0 for two empty sets)."""
    union = first | second
    return len(first & second) / len(union) if union else 1.0


def jaccard_matrix(members: Mapping[str, set]) -> pd.DataFrame:
    """Symmetric matrix of pairwise Jaccard overlaps, labels in the given order."""
    labels = list(members)
    values = [[jaccard(members[a], members[b]) for b in labels] for a in labels]
    return pd.DataFrame(values, index=labels, columns=labels)


def spearman(first: pd.Series, second: pd.Series) -> tuple[float, int]:
    """Spearman's rho over the ids both series score (average ranks for ties) and how many those are.

    NaN when fewer than three ids are shared or either side is constant on them.
    """
    joined = pd.concat([first.rename("a"), second.rename("b")], axis=1, join="inner").dropna()
    if len(joined) < 3:
        return float("nan"), len(joined)
    ranks = joined.rank(method="average")
    if ranks["a"].nunique() < 2 or ranks["b"].nunique() < 2:
        return float("nan"), len(joined)
    return float(np.corrcoef(ranks["a"], ranks["b"])[0, 1]), len(joined)


def spearman_matrices(scores: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Per domain, the matrix of Spearman's rho between methods' scores, plus "all domains": their mean.

    Each frame in `scores` has candidate_id, domain and score. Correlations are taken within a domain
    because several scores (CAP's z among them) are only comparable inside one.
    """
    labels = list(scores)
    domains = sorted({domain for frame in scores.values() for domain in frame["domain"].unique()})
    by_domain = {}
    for domain in domains:
        series = {
            label: frame[frame["domain"] == domain].set_index("candidate_id")["score"]
            for label, frame in scores.items()
        }
        by_domain[domain] = pd.DataFrame(
            [[spearman(series[a], series[b])[0] for b in labels] for a in labels], index=labels, columns=labels
        )
    if by_domain:
        stacked = np.stack([frame.to_numpy() for frame in by_domain.values()])
        with warnings.catch_warnings():
            # a pair no domain can correlate stays NaN; numpy warns about that empty mean
            warnings.simplefilter("ignore", RuntimeWarning)
            mean = np.nanmean(stacked, axis=0)
        by_domain = {ALL_DOMAINS: pd.DataFrame(mean, index=labels, columns=labels), **by_domain}
    return by_domain
