"""The selection report's z histogram draws every plotted candidate once, members in the selected colour."""

import numpy as np
import pandas as pd

from capsel.publish.report import z_figure


def _bars(figure):
    (axes,) = figure.axes
    rest, selected = axes.containers
    return [p.get_height() for p in rest], [p.get_height() for p in selected], axes


def test_members_are_drawn_as_selected_even_beyond_the_pool_sample():
    rng = np.random.default_rng(0)
    pool = pd.DataFrame({"candidate_id": [f"c{i}" for i in range(40)], "z": rng.normal(size=40)})
    top = pool.nlargest(3, "z")
    # the pool is a sample: the top member (z = 4) is not in it
    chosen = pd.concat([top, pd.DataFrame({"candidate_id": ["outside"], "z": [4.0]})], ignore_index=True)
    rest_heights, selected_heights, axes = _bars(z_figure("math", pool, chosen, show_cut=True))

    assert sum(selected_heights) == len(chosen) == 4
    assert sum(rest_heights) == len(pool) - len(top)
    edges = np.histogram_bin_edges(np.concatenate([pool["z"].drop(top.index), chosen["z"]]), bins="auto")
    assert selected_heights == np.histogram(chosen["z"], bins=edges)[0].tolist()
    assert rest_heights == np.histogram(pool["z"].drop(top.index), bins=edges)[0].tolist()
    assert [text.get_text() for text in axes.get_legend().get_texts()][:2] == ["rest of the pool", "selected"]
