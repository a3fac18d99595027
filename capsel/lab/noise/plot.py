"""The paper's Figure "noise" for a lab run: PPL (log scale) and CAP z, clean against junk."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from capsel.lab.figure import save_figure
from capsel.lab.noise.stats import eligible_split

N_BINS = 40


def plot_noise(scores: pd.DataFrame, path: Path, title: str = "") -> Path:
    """Two histograms (share of each group per bin): left PPL on a log axis, right CAP z; clean vs junk."""
    clean, junk = eligible_split(scores)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.0, 3.8), dpi=110)
    ppl = np.concatenate([clean["ppl"].to_numpy(), junk["ppl"].to_numpy()])
    ppl_bins = np.geomspace(max(ppl.min(), 1e-3), ppl.max() * 1.01, N_BINS + 1) if len(ppl) else N_BINS
    z = np.concatenate([clean["z"].to_numpy(), junk["z"].to_numpy()])
    z_bins = np.linspace(z.min(), z.max(), N_BINS + 1) if len(z) else N_BINS
    for axis, column, bins, name in ((left, "ppl", ppl_bins, "perplexity of the reference response"),
                                     (right, "z", z_bins, "CAP z (per domain)")):
        # each group sums to 1, so 30 junk stay as visible as 600 clean (density would hide them in wide log bins)
        for group, colour, label in ((clean, "tab:blue", "clean"), (junk, "tab:red", "junk")):
            weights = np.full(len(group), 1.0 / max(len(group), 1))
            axis.hist(group[column], bins=bins, weights=weights, alpha=0.6, color=colour, label=f"{label} (n={len(group)})")
        axis.set_xlabel(name)
        axis.set_ylabel("share of the group")
        axis.legend(fontsize=8)
    left.set_xscale("log")
    left.set_title("PPL", fontsize=10)
    right.set_title("CAP", fontsize=10)
    return save_figure(fig, path, title)
