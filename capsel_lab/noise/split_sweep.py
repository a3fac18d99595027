"""Where CAP should read late: junk ranks under late = the last k blocks (k = 1..L/2) and the paper's fraction.

Runs on the seed folders `capsel lab noise` wrote (each with its scored capsel.duckdb and the labelled
scores.parquet); nothing is rescored: every split re-averages the stored per-layer profile, as
`capsel select --late last:k` does. k is chosen on one seed only (lowest junk median percentile among the
clean rows, then the largest share of junk below every clean row, then the smaller k) and reported on the others.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import duckdb
import numpy as np
import orjson
import pandas as pd

from capsel.db import open_db, run_sql
from capsel.errors import CapselError, OptionError
from capsel.selection.scoring_key import ScoringKey, resolve_scoring_key, with_layer_split
from capsel_lab.noise.experiment import SCORES_FILE
from capsel_lab.noise.methods import CLEAN_LABELS
from capsel_lab.noise.stats import percentiles_among
from capsel_lab.scored_pool import DB_FILE

PAPER_LATE = "0.66"
SWEEP_FILE = "split_sweep.json"


@dataclass(frozen=True)
class SplitJunk:
    """Where one seed's junk ranks among its clean rows by CAP z under one late split."""

    seed: int
    late: str
    late_layers: tuple[int, int]
    n_clean: int
    n_junk: int
    median_pct: float   # the junk's median percentile among the clean rows' z (low: CAP ranks junk low)
    below_all: float    # share of junk whose z is below every clean row's

    def as_dict(self) -> dict:
        """Plain dict for JSON."""
        return {**asdict(self), "late_layers": list(self.late_layers)}


def junk_position(clean_z: np.ndarray, junk_z: np.ndarray) -> tuple[float, float]:
    """(median percentile of the junk among the clean z, share of junk below every clean z); nan when empty."""
    if len(clean_z) == 0 or len(junk_z) == 0:
        return float("nan"), float("nan")
    return float(np.median(percentiles_among(junk_z, clean_z))), float(np.mean(junk_z < np.min(clean_z)))


def late_splits(n_layers: int) -> list[str]:
    """last:1 .. last:L/2, then the paper's fraction."""
    return [f"last:{k}" for k in range(1, n_layers // 2 + 1)] + [PAPER_LATE]


def seed_sweep(
    con: duckdb.DuckDBPyConnection, key: ScoringKey, labels: pd.DataFrame, seed: int
) -> list[SplitJunk]:
    """Junk ranks of one scored seed under every late split its profile allows (early stays as scored)."""
    probe = with_layer_split(con, key, None, PAPER_LATE)  # the stored profile's depth, checked
    assert probe.layers is not None
    rows = []
    for late in late_splits(probe.layers.n_layers):
        try:
            split_key = with_layer_split(con, key, None, late)
        except OptionError:  # a late side reaching into early on a shallow model: not a split to compare
            continue
        scores = run_sql(con, "scoring/cap_scores", {
            "model_fingerprint": key.model_fingerprint, "config_hash": key.config_hash, "domains": None,
            **split_key.layer_params(),
        }).df().merge(labels, on="candidate_id", how="inner", validate="one_to_one")
        clean = scores.loc[scores["lab_label"].isin(CLEAN_LABELS), "z"].to_numpy(float)
        junk = scores.loc[scores["lab_label"] == "junk", "z"].to_numpy(float)
        median_pct, below_all = junk_position(clean, junk)
        assert split_key.layers is not None
        rows.append(SplitJunk(seed, late, split_key.layers.late, len(clean), len(junk), median_pct, below_all))
    return rows


def choose_split(rows: Sequence[SplitJunk]) -> SplitJunk:
    """The last:k split of one seed with the lowest junk median percentile, then most junk below all, then small k."""
    candidates = [row for row in rows if row.late.startswith("last:") and not np.isnan(row.median_pct)]
    if not candidates:
        raise CapselError("no last:k split with clean and junk rows to choose from")
    return min(candidates, key=lambda row: (row.median_pct, -row.below_all, int(row.late.split(":")[1])))


def run_split_sweep(runs_dir: Path, seeds: Sequence[int] = (0, 1, 2), choose_on: int = 0) -> dict:
    """Sweep every seed folder `runs_dir/seed-S` of `capsel lab noise`; choose k on `choose_on`, report the rest."""
    if choose_on not in seeds:
        raise OptionError(f"[[choose_on]] seed {choose_on} is not among the swept seeds {list(seeds)}")
    per_seed: dict[int, list[SplitJunk]] = {}
    for seed in seeds:
        folder = runs_dir / f"seed-{seed}"
        if not (folder / DB_FILE).exists() or not (folder / SCORES_FILE).exists():
            raise CapselError(f"{folder} has no {DB_FILE} and {SCORES_FILE}: run `capsel lab noise --seeds {seed} "
                              f"--out {runs_dir}` first")
        labels = pd.read_parquet(folder / SCORES_FILE, columns=["candidate_id", "lab_label"])
        con = open_db(folder / DB_FILE)
        try:
            per_seed[seed] = seed_sweep(con, resolve_scoring_key(con), labels, seed)
        finally:
            con.close()
    chosen = choose_split(per_seed[choose_on])
    held_out = [seed for seed in seeds if seed != choose_on]
    run = orjson.loads((runs_dir / "noise.json").read_bytes()) if (runs_dir / "noise.json").is_file() else {}
    return {
        # which model and prompt format the runs scored (from the noise run's summary), for the tables
        "model": Path(str(run.get("model", ""))).name or None,
        "prompt_format": run.get("aggregate", {}).get("prompt_format"),
        "n_blocks": max((row.late_layers[1] for row in per_seed[choose_on]), default=None),
        "chosen_on_seed": choose_on,
        "chosen_late": chosen.late,
        "reported_seeds": held_out,
        # the chosen split and the paper's on the seeds it was not chosen on: the honest comparison
        "held_out": {late: [row.as_dict() for seed in held_out for row in per_seed[seed] if row.late == late]
                     for late in dict.fromkeys([chosen.late, PAPER_LATE])},
        "per_seed": {seed: [row.as_dict() for row in rows] for seed, rows in per_seed.items()},
    }
