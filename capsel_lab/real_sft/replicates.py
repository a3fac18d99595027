"""Across pools: each method's mean, each paired delta's sign test and paired t-test, and the random null's rank.

A replicate is a pool (LAB_NOTES: the thing the claim is about), so these tests take one delta per pool.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from scipy import stats

from capsel_lab.real_sft.plan import BASE, NULL, RANDOM


def sign_test(deltas: list[float]) -> dict:
    """Two-sided sign test of the deltas against 0 (ties left out): pools below 0 (lower loss), above, and p."""
    below, above = sum(d < 0 for d in deltas), sum(d > 0 for d in deltas)
    p = float(stats.binomtest(below, below + above, 0.5).pvalue) if below + above else 1.0
    return {"n_lower": below, "n_higher": above, "n_tied": len(deltas) - below - above, "p": p}


def paired_t(deltas: list[float]) -> float | None:
    """Two-sided p of a one-sample t-test of the per-pool deltas against 0 (None with fewer than 2 pools)."""
    if len(deltas) < 2 or np.std(deltas) == 0:
        return None
    return float(stats.ttest_1samp(deltas, 0.0).pvalue)


def across_pools(pools: list[dict]) -> list[dict]:
    """Per (method, against) of the pools' paired deltas: each pool's delta and verdict, their mean, both tests."""
    grouped: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for pool in pools:
        for delta in pool["deltas"]:
            grouped[(delta["method"], delta["against"])].append({**delta, "pool_seed": pool["pool_seed"]})
    rows = []
    for (method, against), deltas in grouped.items():
        values = [delta["delta"] for delta in deltas]
        verdicts = [delta["verdict"] for delta in deltas]
        rows.append({"method": method, "against": against, "n_pools": len(deltas), "mean_delta": float(np.mean(values)),
                     "pools": [{key: delta[key] for key in ("pool_seed", "delta", "ci95", "verdict")}
                               for delta in deltas],
                     "n_better": verdicts.count("better"), "n_worse": verdicts.count("worse"),
                     "sign_test": sign_test(values), "t_test_p": paired_t(values)})
    return rows


def method_means(pools: list[dict]) -> list[dict]:
    """Per method (the null left out), over pools: mean and std of the loss, mean rows, junk and response tokens."""
    grouped: dict[str, list[dict]] = defaultdict(list)
    for pool in pools:
        for model in pool["models"]:
            if model["method"] != NULL:
                grouped[model["method"]].append(model)
    table = []
    for method, models in grouped.items():
        losses = np.array([model["loss"] for model in models], dtype=float)
        entry = {"method": method, "n_pools": len(models), "loss_mean": float(losses.mean()),
                 "loss_std": float(losses.std(ddof=1)) if len(losses) > 1 else 0.0}
        if method != BASE:
            for key in ("n_members", "n_junk", "response_tokens"):
                entry[f"{key}_mean"] = float(np.mean([model[key] for model in models]))
        table.append(entry)
    return table


def null_rank(pool: dict, method: str = "cap") -> dict | None:
    """Where `method`'s model ranks among the pool's random subsets (the method's own random draw and the null's),
    by held-out loss: rank 1 is the lowest; p = (1 + draws at or below it) / (1 + draws)."""
    randoms = [model["loss"] for model in pool["models"] if model["method"] in (RANDOM, NULL)]
    ours = [model["loss"] for model in pool["models"] if model["method"] == method]
    if len(randoms) < 2 or not ours:
        return None
    at_or_below = sum(loss <= ours[0] for loss in randoms)
    return {"pool_seed": pool["pool_seed"], "method": method, "loss": ours[0], "n_random": len(randoms),
            "rank": 1 + sum(loss < ours[0] for loss in randoms), "p": (1 + at_or_below) / (1 + len(randoms)),
            "random_losses": sorted(randoms), "random_median": float(np.median(randoms))}
