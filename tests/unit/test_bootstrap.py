"""capsel's bootstrap intervals equal a plain loop over resamples; they cover what they should on known data."""

from __future__ import annotations

import numpy as np
import pytest

from capsel.evaluation.bootstrap import paired_delta_interval, ratio_interval, resampled_indices
from capsel.evaluation.paired import BETTER, INDISTINGUISHABLE, WORSE, verdict
from tests.reference.naive_bootstrap import naive_paired_interval, naive_ratio_interval


@pytest.mark.parametrize("n", [1, 7, 250])
def test_ratio_interval_equals_a_plain_loop(n):
    rng = np.random.default_rng(n)
    outcome, weight = rng.gamma(2.0, 3.0, n), rng.integers(1, 40, n).astype(float)
    assert ratio_interval(outcome, weight, 300, seed=4) == pytest.approx(
        naive_ratio_interval(outcome, weight, 300, seed=4), rel=1e-12)


def test_paired_interval_equals_a_plain_loop_and_pairs_the_rows():
    rng = np.random.default_rng(1)
    base = rng.gamma(2.0, 3.0, 60)
    weight = rng.integers(1, 40, 60).astype(float)
    shifted = base - 0.05 * weight + rng.normal(0, 0.01, 60)  # every row a little better: loss per token -0.05
    got = paired_delta_interval(shifted, weight, base, weight, 400, seed=9)
    assert got == pytest.approx(naive_paired_interval(shifted, weight, base, weight, 400, seed=9), rel=1e-12)
    # paired, the common row noise cancels: a tight interval around -0.05, far narrower than either value's
    assert got[0] < -0.05 < got[1] and got[1] - got[0] < 0.005
    alone = ratio_interval(base, weight, 400, seed=9)
    assert alone[1] - alone[0] > 20 * (got[1] - got[0])


def test_chunks_draw_the_same_stream_as_one_block(monkeypatch):
    whole = np.concatenate(list(resampled_indices(13, 50, seed=2)))
    monkeypatch.setattr("capsel.evaluation.bootstrap._CELLS_PER_CHUNK", 13 * 3)  # 3 resamples a chunk
    chunked = list(resampled_indices(13, 50, seed=2))
    assert len(chunked) == 17 and np.array_equal(np.concatenate(chunked), whole)
    assert np.array_equal(whole, np.random.default_rng(2).integers(0, 13, size=(50, 13)))


def test_an_interval_of_a_known_mean_covers_it_about_95_in_100_times():
    truth, covered = 0.3, 0
    for trial in range(200):
        correct = (np.random.default_rng(trial).random(150) < truth).astype(float)
        low, high = ratio_interval(correct, np.ones(150), 500, seed=trial)
        covered += low <= truth <= high
    assert 180 <= covered <= 199  # binomial(200, 0.95) lies in [183, 196] 99% of the time; percentile CIs run low


@pytest.mark.parametrize(("metric", "ci", "expected"), [
    ("loss", (-0.2, -0.1), BETTER), ("loss", (0.1, 0.2), WORSE), ("loss", (-0.1, 0.1), INDISTINGUISHABLE),
    ("exact_match_strict", (0.05, 0.2), BETTER), ("pass@1", (-0.3, -0.01), WORSE),
    ("exact_match_strict", (0.0, 0.2), INDISTINGUISHABLE), ("loss", None, INDISTINGUISHABLE),
])
def test_the_verdict_reads_the_interval_in_the_metrics_own_sense(metric, ci, expected):
    assert verdict(metric, ci) == expected
