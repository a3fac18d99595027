"""Bootstrap intervals computed plainly: one resample at a time, in a Python loop, numpy's percentile at the end.

The resamples are drawn as capsel documents them (numpy's default_rng(seed), n indices in [0, n) per resample),
so the intervals agree exactly, not only in distribution.
"""

from __future__ import annotations

import numpy as np


def naive_ratio_interval(outcome, weight, resamples: int, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(resamples):
        picked = rng.integers(0, len(outcome), size=len(outcome))
        values.append(sum(outcome[i] for i in picked) / sum(weight[i] for i in picked))
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def naive_paired_interval(a, a_weight, b, b_weight, resamples: int, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    deltas = []
    for _ in range(resamples):
        picked = rng.integers(0, len(a), size=len(a))
        deltas.append(sum(a[i] for i in picked) / sum(a_weight[i] for i in picked)
                      - sum(b[i] for i in picked) / sum(b_weight[i] for i in picked))
    low, high = np.percentile(deltas, [2.5, 97.5])
    return float(low), float(high)
