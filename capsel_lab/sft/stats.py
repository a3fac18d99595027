"""The SFT table: mean ± standard deviation over seeds per budget and method."""

from __future__ import annotations

import numpy as np

METRICS = ("accuracy", "accuracy_known", "accuracy_learnable", "n_train", "n_junk", "n_learnable")


def summarise_runs(runs: list[dict]) -> list[dict]:
    """One row per (budget, method) in first-seen order: seeds, and mean and sample std (ddof 1) of each metric."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for run in runs:
        groups.setdefault((run["budget"], run["method"]), []).append(run)
    table = []
    for (budget, method), rows in groups.items():
        row = {"budget": budget, "method": method, "n_seeds": len(rows)}
        for metric in METRICS:
            values = np.array([r[metric] for r in rows if r[metric] is not None], dtype=float)
            row[f"{metric}_mean"] = float(values.mean()) if len(values) else None
            row[f"{metric}_std"] = float(values.std(ddof=1)) if len(values) > 1 else 0.0
        table.append(row)
    return table
