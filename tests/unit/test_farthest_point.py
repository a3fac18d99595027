"""Greedy k-center against brute-force references on small point sets."""

import numpy as np
import pytest

from capsel.selection import farthest_point
from capsel.selection.farthest_point import greedy_k_center, start_index
from tests.reference.naive_kcenter import covering_radius, naive_greedy, optimal_radius, pairwise


@pytest.mark.parametrize("seed,n,d,k", [(0, 40, 2, 7), (1, 60, 5, 12), (2, 25, 16, 25), (3, 80, 3, 1)])
def test_each_new_center_is_the_point_farthest_from_the_chosen_set(seed, n, d, k):
    points = np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)
    centers = greedy_k_center(points, k)
    distances = pairwise(points)
    order = centers.order.tolist()
    assert order[0] == start_index(points)
    for step in range(1, len(order)):
        to_chosen = distances[:, order[:step]].min(axis=1)
        assert to_chosen[order[step]] == pytest.approx(to_chosen.max(), rel=1e-5)
        assert centers.distances[step] == pytest.approx(to_chosen[order[step]], rel=1e-4)
    assert np.isinf(centers.distances[0])
    assert order == naive_greedy(points, k, order[0])
    assert centers.radius == pytest.approx(covering_radius(points, order), rel=1e-4)
    assert len(set(order)) == len(order) == min(k, n)


@pytest.mark.parametrize("seed", range(4))
def test_covering_radius_is_within_twice_the_optimum(seed):
    rng = np.random.default_rng(seed)
    # three loose clusters, so the optimum is far from trivial
    points = np.concatenate([rng.normal(loc, 0.3, size=(4, 2)) for loc in ((0, 0), (3, 0), (0, 3))])
    for k in (2, 3, 4):
        greedy = greedy_k_center(points, k)
        optimum = optimal_radius(points, k)
        assert greedy.radius <= 2 * optimum + 1e-9
        assert greedy.radius == pytest.approx(covering_radius(points, greedy.order.tolist()), rel=1e-6)


def test_start_is_the_point_nearest_the_mean_and_ties_go_to_the_lowest_index():
    points = np.array([[5.0, 5.0], [1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, 1.0]], dtype=np.float32)
    mean = points.mean(axis=0)
    nearest = np.linalg.norm(points - mean, axis=1)
    assert start_index(points) == int(np.argmin(nearest))
    # exact duplicates: the two copies of (2, 0) are equally far from the start; the lower index wins
    duplicates = np.array([[0.0, 0.0], [2.0, 0.0], [2.0, 0.0], [-1.0, 0.0]], dtype=np.float32)
    assert greedy_k_center(duplicates, 2, start=0).order.tolist() == [0, 1]


def test_more_centers_than_points_and_none():
    points = np.eye(3, dtype=np.float32)
    assert sorted(greedy_k_center(points, 10).order.tolist()) == [0, 1, 2]
    assert greedy_k_center(points, 10).radius == 0.0
    assert len(greedy_k_center(points, 0).order) == 0


def test_blocked_distance_updates_give_the_same_centers(monkeypatch):
    points = np.random.default_rng(5).normal(size=(1000, 8)).astype(np.float32)
    whole = greedy_k_center(points, 30)
    monkeypatch.setattr(farthest_point, "BLOCK_ROWS", 37)
    blocked = greedy_k_center(points, 30)
    assert whole.order.tolist() == blocked.order.tolist()
    np.testing.assert_allclose(whole.distances[1:], blocked.distances[1:], rtol=1e-6)


def test_duplicate_points_are_picked_once_each_when_everything_is_covered():
    # three distinct points, each twice: after three picks every point is at distance 0 from a center
    points = np.array([[0.0, 0.0], [0.0, 0.0], [3.0, 0.0], [3.0, 0.0], [0.0, 4.0], [0.0, 4.0]], dtype=np.float32)
    centers = greedy_k_center(points, 6, start=0)
    assert sorted(centers.order.tolist()) == list(range(6))
    assert centers.order.tolist() == naive_greedy(points, 6, 0)
    assert centers.covering[-1] == 0.0 and centers.distances[3:].tolist() == [0.0, 0.0, 0.0]
