"""The split sweep's junk position, the splits it tries and the rule that chooses k."""

import numpy as np
import pytest

from capsel.errors import CapselError
from capsel_lab.noise.split_sweep import SplitJunk, choose_split, junk_position, late_splits


def test_junk_position_is_the_median_percentile_and_the_share_below_every_clean_row():
    # -1 lies below all three clean values (percentile 0), 1 ties the middle one (100 * 1.5 / 3)
    assert junk_position(np.array([0.0, 1.0, 2.0]), np.array([-1.0, 1.0])) == (25.0, 0.5)
    assert all(np.isnan(junk_position(np.array([]), np.array([1.0]))))


def test_the_splits_are_last_1_to_half_the_depth_then_the_papers():
    assert late_splits(12) == ["last:1", "last:2", "last:3", "last:4", "last:5", "last:6", "0.66"]
    assert late_splits(3) == ["last:1", "0.66"]


def row(late: str, median_pct: float, below_all: float) -> SplitJunk:
    return SplitJunk(0, late, (1, 1), 10, 2, median_pct, below_all)


def test_k_is_the_lowest_median_then_the_most_below_all_then_the_smaller_k():
    rows = [row("last:1", 20.0, 0.1), row("last:2", 10.0, 0.2), row("last:3", 10.0, 0.5), row("last:4", 10.0, 0.5),
            row("0.66", 1.0, 1.0), row("last:5", float("nan"), float("nan"))]
    # the paper's fraction is reported, never chosen: the sweep picks k
    assert choose_split(rows).late == "last:3"
    with pytest.raises(CapselError, match="no last:k split"):
        choose_split([row("0.66", 1.0, 1.0)])
