"""Writing a lab figure: headless matplotlib, an optional title, tight layout, PNG, closed."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: written by the CLI, never shown
import matplotlib.pyplot as plt  # noqa: E402


def save_figure(fig: plt.Figure, path: Path, title: str = "") -> Path:
    """Title the figure (when given), lay it out, write it to `path` and free it."""
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
