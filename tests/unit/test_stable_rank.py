"""Stable rank against numpy's norms, and the U-shape test on hand-made profiles."""

import math

import numpy as np
import pytest
import torch

from capsel.errors import CapselError
from capsel.profile.stable_rank import normalised_stable_rank, stable_rank
from capsel.profile.survey import LayerRank, RankProfile
from capsel.profile.verdict import has_u_shape


def numpy_stable_rank(matrix: np.ndarray) -> float:
    return np.linalg.norm(matrix, "fro") ** 2 / np.linalg.norm(matrix, 2) ** 2


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (64, 64), (200, 17)])
def test_matches_numpy_on_random_matrices(shape):
    matrix = np.random.default_rng(sum(shape)).normal(size=shape)
    expected = numpy_stable_rank(matrix)
    assert stable_rank(torch.tensor(matrix)) == pytest.approx(expected, rel=1e-5)
    assert normalised_stable_rank(torch.tensor(matrix)) == pytest.approx(expected / min(shape), rel=1e-5)


def test_rank_one_and_isotropic_extremes():
    u, v = np.arange(1.0, 6.0), np.arange(1.0, 4.0)
    assert stable_rank(torch.tensor(np.outer(u, v))) == pytest.approx(1.0, rel=1e-5)
    assert normalised_stable_rank(torch.eye(7)) == pytest.approx(1.0)
    assert stable_rank(torch.zeros(3, 4)) == 0.0
    with pytest.raises(ValueError):
        stable_rank(torch.zeros(3))


def _profile(values):
    n = len(values)
    layers = tuple(LayerRank(i + 1, (i + 1) / n, 0.5, v, 7, 100) for i, v in enumerate(values))
    return RankProfile("synthetic", layers)


def test_u_shape_present_with_interior_trough():
    verdict = has_u_shape(_profile([0.30, 0.20, 0.10, 0.08, 0.12, 0.25]))
    assert verdict.present
    assert (verdict.trough_layer, verdict.trough) == (4, 0.08)
    assert verdict.trough_depth == pytest.approx(4 / 6)
    assert (verdict.left_peak, verdict.right_peak) == (0.30, 0.25)


@pytest.mark.parametrize("values, why", [
    ([0.30, 0.25, 0.20, 0.15, 0.10], "last"),      # monotone compression, no re-expansion
    ([0.10, 0.15, 0.20, 0.25, 0.30], "first"),     # monotone expansion
    ([0.30, 0.20, 0.10, 0.11, 0.115], "reach"),    # late rise smaller than the margin
    ([0.20, 0.20, 0.20, 0.20, 0.20], "first"),     # flat: minimum at the first block
])
def test_u_shape_absent(values, why):
    verdict = has_u_shape(_profile(values))
    assert not verdict.present
    assert why in verdict.reason
    assert math.isnan(verdict.left_peak) or math.isnan(verdict.right_peak) or why == "reach"


def test_u_shape_needs_three_blocks():
    with pytest.raises(CapselError, match="at least 3"):
        has_u_shape(_profile([0.2, 0.1]))
