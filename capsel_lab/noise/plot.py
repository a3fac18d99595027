"""The paper's Figure "noise" for a lab run (PPL and CAP z, clean against each junk kind), and junk percentiles."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from capsel_lab.figure import save_figure
from capsel_lab.noise.methods import METHOD_COLUMNS, METHOD_NAMES
from capsel_lab.noise.stats import eligible_split, junk_kind

N_BINS = 40
KIND_COLOURS = {"salad": "tab:red", "shuffled": "tab:orange"}


def plot_noise(scores: pd.DataFrame, path: Path, title: str = "") -> Path:
    """Two histograms (share of each group per bin): left PPL on a log axis, right CAP z; clean vs each junk kind."""
    clean, junk = eligible_split(scores)
    groups = [(clean, "tab:blue", "clean")] + [
        (junk[junk_kind(junk) == kind], KIND_COLOURS.get(kind, "tab:red"), f"junk: {kind}")
        for kind in sorted(junk_kind(junk).unique())
    ]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.0, 3.8), dpi=110)
    ppl = np.concatenate([clean["ppl"].to_numpy(), junk["ppl"].to_numpy()])
    ppl_bins = np.geomspace(max(ppl.min(), 1e-3), ppl.max() * 1.01, N_BINS + 1) if len(ppl) else N_BINS
    z = np.concatenate([clean["z"].to_numpy(), junk["z"].to_numpy()])
    z_bins = np.linspace(z.min(), z.max(), N_BINS + 1) if len(z) else N_BINS
    for axis, column, bins, name in ((left, "ppl", ppl_bins, "perplexity of the reference response"),
                                     (right, "z", z_bins, "CAP z (per domain)")):
        # each group sums to 1, so 15 junk stay as visible as 450 clean (density would hide them in wide log bins)
        for group, colour, label in groups:
            weights = np.full(len(group), 1.0 / max(len(group), 1))
            axis.hist(group[column], bins=bins, weights=weights, alpha=0.55, color=colour,
                      label=f"{label} (n={len(group)})")
        axis.set_xlabel(name)
        axis.set_ylabel("share of the group")
        axis.legend(fontsize=8)
    left.set_xscale("log")
    left.set_title("PPL: a PPL-top selection takes the right end", fontsize=10)
    right.set_title("CAP: a CAP-top selection takes the right end", fontsize=10)
    return save_figure(fig, path, title)


def plot_junk_percentiles(junk: pd.DataFrame, path: Path, title: str = "") -> Path:
    """Each junk candidate's percentile among clean ones, per method and junk kind (all seeds): where junk goes."""
    methods = [method for method in METHOD_COLUMNS if f"{method}_pct" in junk.columns]
    kinds = sorted(junk_kind(junk).unique())
    fig, axis = plt.subplots(figsize=(2.6 + 2.2 * len(methods), 4.0), dpi=110)
    rng = np.random.default_rng(0)  # jitter only; the same picture on every run
    width = 0.8 / max(len(kinds), 1)
    for position, method in enumerate(methods):
        for offset, kind in enumerate(kinds):
            values = junk.loc[junk_kind(junk) == kind, f"{method}_pct"].to_numpy()
            x = position - 0.4 + width * (offset + 0.5) + rng.uniform(-width / 3, width / 3, len(values))
            axis.scatter(x, values, s=14, alpha=0.7, color=KIND_COLOURS.get(kind, "tab:red"),
                         label=f"junk: {kind}" if position == 0 else None)
    for level, style in ((95, "--"), (5, ":")):
        axis.axhline(level, color="grey", linestyle=style, linewidth=0.8)
    if "cap_guard" in methods:
        # a candidate the guard holds back can never be selected: it ranks below every eligible one
        axis.annotate("held back by the guard:\nbelow every eligible row", (methods.index("cap_guard"), 2), ha="center",
                      va="bottom", fontsize=7, color="grey")
    axis.set_xticks(range(len(methods)), [METHOD_NAMES[method] for method in methods], fontsize=8)
    axis.set_ylim(-3, 103)
    axis.set_ylabel("percentile among clean candidates\n(100: above every clean one)")
    axis.legend(fontsize=8, loc="center right")
    return save_figure(fig, path, title)
