"""Jaccard overlap and Spearman correlation used by `capsel compare`."""

import math

import numpy as np
import pandas as pd
import pytest

from capsel.compare.metrics import ALL_DOMAINS, jaccard, jaccard_matrix, spearman, spearman_matrices


def test_jaccard_by_hand():
    assert jaccard({"a", "b", "c"}, {"b", "c", "d", "e"}) == 2 / 5
    assert jaccard(set(), set()) == 1.0
    matrix = jaccard_matrix({"x": {"a"}, "y": {"a", "b"}, "z": {"c"}})
    assert matrix.loc["x", "y"] == matrix.loc["y", "x"] == 0.5
    assert matrix.loc["x", "z"] == 0.0 and (np.diag(matrix) == 1.0).all()


def test_spearman_without_ties_matches_the_rank_difference_formula():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=30), rng.normal(size=30)
    ids = [f"c{i}" for i in range(30)]
    rank_a, rank_b = a.argsort().argsort(), b.argsort().argsort()
    expected = 1 - 6 * ((rank_a - rank_b) ** 2).sum() / (30 * (30 ** 2 - 1))
    rho, n = spearman(pd.Series(a, index=ids), pd.Series(b, index=ids))
    assert n == 30 and rho == pytest.approx(expected)


def test_spearman_uses_shared_ids_only_and_average_ranks_for_ties():
    first = pd.Series([1.0, 2.0, 2.0, 3.0, 9.0], index=["a", "b", "c", "d", "only-first"])
    second = pd.Series([10.0, 20.0, 30.0, 40.0], index=["d", "c", "b", "a"])
    rho, n = spearman(first, second)
    ranks_first = np.array([1.0, 2.5, 2.5, 4.0])  # a, b, c, d
    ranks_second = np.array([4.0, 3.0, 2.0, 1.0])
    assert n == 4
    assert rho == pytest.approx(np.corrcoef(ranks_first, ranks_second)[0, 1])
    assert math.isnan(spearman(first.iloc[:2], second)[0])


def test_spearman_matrices_are_per_domain_with_their_mean():
    frame = lambda values: pd.DataFrame({  # noqa: E731
        "candidate_id": ["m1", "m2", "m3", "m4", "s1", "s2", "s3"],
        "domain": ["math"] * 4 + ["science"] * 3, "score": values,
    })
    scores = {"p": frame([1, 2, 3, 4, 1, 2, 3]), "q": frame([4, 3, 2, 1, 1, 2, 3])}
    matrices = spearman_matrices(scores)
    assert list(matrices) == [ALL_DOMAINS, "math", "science"]
    assert matrices["math"].loc["p", "q"] == pytest.approx(-1.0)
    assert matrices["science"].loc["p", "q"] == pytest.approx(1.0)
    assert matrices[ALL_DOMAINS].loc["p", "q"] == pytest.approx(0.0)
