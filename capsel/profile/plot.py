"""The survey as a figure: weight and hidden-state stable rank over normalised depth (paper Figure 1)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: the CLI and the flows write files, they never open windows
import matplotlib.pyplot as plt  # noqa: E402

from capsel.profile.survey import RankProfile  # noqa: E402
from capsel.profile.verdict import Verdict  # noqa: E402


def plot_profile(profile: RankProfile, verdict: Verdict, path: Path) -> Path:
    """Weights (blue circles, left axis) and hidden states (red squares, right axis) on one PNG."""
    depth = [layer.depth for layer in profile.layers]
    fig, weights_axis = plt.subplots(figsize=(6.4, 4.0), dpi=110)
    weights_axis.plot(depth, [layer.weight_srank for layer in profile.layers], "o-", color="tab:blue",
                      label="weights (mean srank / min dim)")
    weights_axis.set_xlabel("normalised depth (layer / L)")
    weights_axis.set_ylabel("weight stable rank / dim", color="tab:blue")
    hidden_axis = weights_axis.twinx()
    hidden_axis.plot(depth, profile.hidden(), "s-", color="tab:red", label="hidden states (srank / min dim)")
    hidden_axis.set_ylabel("hidden-state stable rank / dim", color="tab:red")
    hidden_axis.axvline(verdict.trough_depth, color="tab:red", linestyle=":", linewidth=1)
    status = "U-shape present" if verdict.present else "no U-shape"
    weights_axis.set_title(f"{profile.model}: {status} (trough at block {verdict.trough_layer})", fontsize=10,
                           parse_math=False)  # a model path: never TeX
    lines = weights_axis.get_lines()[:1] + hidden_axis.get_lines()[:1]
    weights_axis.legend(lines, [str(line.get_label()) for line in lines], loc="upper center", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
