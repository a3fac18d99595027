"""Brute-force k-center references: pairwise distance matrices, slow on purpose."""

from __future__ import annotations

import itertools

import numpy as np


def pairwise(points: np.ndarray) -> np.ndarray:
    """Euclidean distance between every pair of rows, float64."""
    diff = points[:, None, :].astype(np.float64) - points[None, :, :].astype(np.float64)
    return np.sqrt((diff ** 2).sum(-1))


def naive_greedy(points: np.ndarray, k: int, start: int) -> list[int]:
    """Farthest-point traversal from the full distance matrix: next = argmax of min distance to the chosen."""
    distances = pairwise(points)
    chosen = [start]
    while len(chosen) < min(k, len(points)):
        to_set = distances[:, chosen].min(axis=1)
        to_set[chosen] = -1.0
        chosen.append(int(np.argmax(to_set)))
    return chosen


def covering_radius(points: np.ndarray, centers: list[int]) -> float:
    """Largest distance of any point to its nearest center."""
    return float(pairwise(points)[:, centers].min(axis=1).max())


def optimal_radius(points: np.ndarray, k: int) -> float:
    """The smallest covering radius over every k-subset of the points (tiny instances only)."""
    return min(covering_radius(points, list(subset)) for subset in itertools.combinations(range(len(points)), k))
