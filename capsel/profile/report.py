"""The survey written to disk: a CSV row per block, the plot, and the verdict as JSON."""

from __future__ import annotations

import csv
import json
from dataclasses import asdict
from pathlib import Path

from capsel.profile.plot import plot_profile
from capsel.profile.survey import RankProfile
from capsel.profile.verdict import Verdict

CSV_FIELDS = ["layer", "depth", "weight_srank", "hidden_srank", "n_weight_matrices", "n_tokens"]


def write_csv(profile: RankProfile, path: Path) -> Path:
    """One row per decoder block, columns as in `CSV_FIELDS`."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_FIELDS)
        writer.writeheader()
        for layer in profile.layers:
            writer.writerow(asdict(layer))
    return path


def write_verdict(profile: RankProfile, verdict: Verdict, path: Path) -> Path:
    """The verdict and the model it is about, as JSON."""
    path.write_text(json.dumps({"model": profile.model, **asdict(verdict)}, indent=1), encoding="utf-8")
    return path


def write_profile(profile: RankProfile, verdict: Verdict, out_dir: Path) -> list[Path]:
    """profile.csv, profile.png and verdict.json in `out_dir` (created)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    return [write_csv(profile, out_dir / "profile.csv"), plot_profile(profile, verdict, out_dir / "profile.png"),
            write_verdict(profile, verdict, out_dir / "verdict.json")]
