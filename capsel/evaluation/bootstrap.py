"""Bootstrap intervals over evaluated rows: a metric is a ratio of sums, recomputed on every resample of rows.

Resample b draws n row indices with replacement: `numpy.random.default_rng(seed).integers(0, n, (B, n))`, row b
(drawn in chunks, which gives the same stream). The 95% interval is the 2.5th and 97.5th percentile of the B
recomputed values (numpy's linear interpolation). A paired interval draws one set of indices for both targets.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

RESAMPLES = 2000
SEED = 0
LEVEL = 0.95
_CELLS_PER_CHUNK = 4_000_000  # index cells held at once (32 MB), whatever the number of rows


def resampled_indices(n: int, resamples: int = RESAMPLES, seed: int = SEED) -> Iterator[np.ndarray]:
    """The resamples' row indices, in chunks of whole resamples (each chunk: resamples x n)."""
    rng = np.random.default_rng(seed)
    per_chunk = max(1, _CELLS_PER_CHUNK // max(n, 1))
    for start in range(0, resamples, per_chunk):
        yield rng.integers(0, n, size=(min(per_chunk, resamples - start), n))


def ratio_of_sums(outcome, weight) -> float:
    """sum(outcome) / sum(weight): a token-weighted loss, or the share correct when every weight is 1."""
    total = float(np.sum(weight))
    return float(np.sum(outcome)) / total if total else float("nan")


def _percentiles(values: np.ndarray) -> tuple[float, float]:
    tail = (1 - LEVEL) / 2 * 100
    low, high = np.nanpercentile(values, [tail, 100 - tail])  # a resample of rows without weight has no value
    return float(low), float(high)


def _resampled_ratios(outcome: np.ndarray, weight: np.ndarray, indices: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return outcome[indices].sum(axis=1) / weight[indices].sum(axis=1)


def ratio_interval(outcome, weight, resamples: int = RESAMPLES, seed: int = SEED) -> tuple[float, float] | None:
    """95% percentile interval of sum(outcome)/sum(weight) over row resamples; None without rows."""
    outcome, weight = np.asarray(outcome, dtype=np.float64), np.asarray(weight, dtype=np.float64)
    if len(outcome) == 0:
        return None
    values = np.concatenate([_resampled_ratios(outcome, weight, chunk)
                             for chunk in resampled_indices(len(outcome), resamples, seed)])
    return _percentiles(values)


def paired_delta_interval(outcome_a, weight_a, outcome_b, weight_b, resamples: int = RESAMPLES,
                          seed: int = SEED) -> tuple[float, float] | None:
    """95% interval of ratio(A) - ratio(B) where each resample takes the same rows for A and B."""
    arrays = [np.asarray(values, dtype=np.float64) for values in (outcome_a, weight_a, outcome_b, weight_b)]
    if len(arrays[0]) == 0:
        return None
    deltas = [_resampled_ratios(arrays[0], arrays[1], chunk) - _resampled_ratios(arrays[2], arrays[3], chunk)
              for chunk in resampled_indices(len(arrays[0]), resamples, seed)]
    return _percentiles(np.concatenate(deltas))
