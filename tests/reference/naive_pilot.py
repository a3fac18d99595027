"""The pilot's statistics recomputed naively, in plain Python loops over rows, from per-row outcomes alone: a
reference the tests hold capsel/pilot/statistics.py to.

It follows the draw order capsel/pilot/statistics.py documents (numpy's default_rng(seed): R replicate indices,
then for each drawn replicate n row indices and, with 2 or more seeds, S seed indices for the method and S for its
reference), and nothing else of capsel's code.
"""

from __future__ import annotations

import numpy as np


def ratio(outcomes: list[float], weights: list[float]) -> float:
    """sum(outcome) / sum(weight), one row at a time."""
    top = bottom = 0.0
    for outcome, weight in zip(outcomes, weights):
        top += outcome
        bottom += weight
    return top / bottom


def seed_mean(per_seed: list[list[float]], seeds: list[int]) -> list[float]:
    """Each row's outcome averaged over the given seeds (per_seed[row][seed])."""
    return [sum(row[seed] for seed in seeds) / len(seeds) for row in per_seed]


def hierarchical(pairs: list[tuple[list[list[float]], list[list[float]], list[float]]], resamples: int,
                 seed: int) -> tuple[float, float, float]:
    """(2.5th percentile, 97.5th percentile, two-sided p) of the mean delta; pairs are (method's outcomes per row and
    seed, reference's, the rows' weights)."""
    rng = np.random.default_rng(seed)
    n_replicates = len(pairs)
    deltas = []
    for _ in range(resamples):
        drawn = []
        for replicate in rng.integers(0, n_replicates, n_replicates):
            method, reference, weights = pairs[int(replicate)]
            rows = [int(row) for row in rng.integers(0, len(weights), len(weights))]
            n_seeds = len(method[0])
            if n_seeds > 1:
                ours_seeds = [int(s) for s in rng.integers(0, n_seeds, n_seeds)]
                theirs_seeds = [int(s) for s in rng.integers(0, n_seeds, n_seeds)]
            else:
                ours_seeds = theirs_seeds = [0]
            ours = seed_mean([method[row] for row in rows], ours_seeds)
            theirs = seed_mean([reference[row] for row in rows], theirs_seeds)
            picked = [weights[row] for row in rows]
            drawn.append(ratio(ours, picked) - ratio(theirs, picked))
        deltas.append(sum(drawn) / len(drawn))
    below = sum(1 for delta in deltas if delta <= 0)
    above = sum(1 for delta in deltas if delta >= 0)
    p = min(1.0, 2 * (min(below, above) + 1) / (resamples + 1))
    low, high = np.percentile(deltas, [2.5, 97.5])
    return float(low), float(high), p


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment, written out: the i-th smallest p times (m - i + 1), made monotone, capped at 1."""
    m = len(p_values)
    ranked = sorted((p, index) for index, p in enumerate(p_values))
    adjusted = [0.0] * m
    best = 0.0
    for i, (p, index) in enumerate(ranked, start=1):
        best = max(best, min(1.0, (m - i + 1) * p))
        adjusted[index] = best
    return adjusted
