"""Greedy k-center (farthest-point traversal): each new center is the point farthest from those chosen.

Memory is O(n·d) for the points plus O(n) for the distance of every point to its nearest center;
each step is one matrix-vector product over the points, in blocks, so 1M × 384 points never
build an n × n matrix. The result is a 2-approximation of the optimal covering radius.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BLOCK_ROWS = 262_144


@dataclass(frozen=True)
class Centers:
    """Chosen row indices in pick order, each pick's distance to the earlier picks, and the radius after it."""

    order: np.ndarray
    distances: np.ndarray
    covering: np.ndarray

    @property
    def radius(self) -> float:
        """Covering radius after the last pick: the largest distance of any point to its nearest center."""
        return float(self.covering[-1]) if len(self.covering) else 0.0


def start_index(points: np.ndarray) -> int:
    """The deterministic first center: the point closest to the mean (lowest index on ties)."""
    mean = points.mean(axis=0, dtype=np.float64).astype(points.dtype)
    return int(np.argmin(_squared_distances(points, _row_norms(points), mean)))


def greedy_k_center(points: np.ndarray, k: int, start: int | None = None) -> Centers:
    """Pick min(k, n) centers from `points` [n, d]; ties go to the lowest index (callers sort rows by id).

    `distances[i]` is the Euclidean distance of pick i to the nearest earlier pick (inf for the first);
    `covering[i]` is the covering radius once picks 0..i are chosen.
    """
    n = len(points)
    k = min(k, n)
    if k <= 0:
        return Centers(np.empty(0, dtype=np.int64), np.empty(0), np.empty(0))
    norms = _row_norms(points)
    nearest = np.full(n, np.inf, dtype=np.float64)
    order = np.empty(k, dtype=np.int64)
    picked_at = np.empty(k, dtype=np.float64)
    covering = np.empty(k, dtype=np.float64)
    current = start_index(points) if start is None else int(start)
    for step in range(k):
        order[step] = current
        picked_at[step] = nearest[current]
        np.minimum(nearest, _squared_distances(points, norms, points[current]), out=nearest)
        # below every real distance, so a picked point is never picked again, even when duplicates leave every
        # other point at distance 0 (the naive reference in tests/reference does the same)
        nearest[current] = -1.0
        current = int(np.argmax(nearest))
        covering[step] = max(nearest[current], 0.0)
    return Centers(order, _sqrt(picked_at), _sqrt(covering))


def _row_norms(points: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", points, points, dtype=np.float64)


def _squared_distances(points: np.ndarray, norms: np.ndarray, center: np.ndarray) -> np.ndarray:
    """|x - c|² for every row, as |x|² + |c|² - 2 x·c in blocks; clipped at 0 against rounding."""
    center = center.astype(points.dtype, copy=False)
    center_norm = float(np.dot(center.astype(np.float64), center.astype(np.float64)))
    out = np.empty(len(points), dtype=np.float64)
    for start in range(0, len(points), BLOCK_ROWS):
        block = slice(start, start + BLOCK_ROWS)
        out[block] = norms[block] + center_norm - 2.0 * (points[block] @ center).astype(np.float64)
    return np.maximum(out, 0.0, out=out)


def _sqrt(values: np.ndarray) -> np.ndarray:
    return np.sqrt(values, where=np.isfinite(values), out=np.full_like(values, np.inf))
