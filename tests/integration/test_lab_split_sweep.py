"""`capsel lab split-sweep` on seed folders shaped as `capsel lab noise` leaves them (a scored DB with stored
profiles and labelled scores): every late split against numpy, k chosen on seed 0 only."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from capsel.cli.main import app
from capsel.db import open_db
from capsel.errors import CapselError
from capsel_lab.noise.split_sweep import SplitJunk, choose_split, run_split_sweep
from capsel_lab.noise.stats import percentiles_among
from tests.support.scored_pool import make_pool

N_LAYERS, SIZES, N_JUNK = 12, {"code": 40, "math": 40}, 4


def seed_folder(root, seed: int) -> pd.DataFrame:
    """seed-S/capsel.duckdb and its scores.parquet; the junk's last two blocks diverge far less than clean rows'."""
    folder = root / f"seed-{seed}"
    folder.mkdir()
    con = open_db(folder / "capsel.duckdb")
    tables = make_pool(con, SIZES, seed=seed, n_layers=N_LAYERS)
    con.close()
    scores = tables.divergences.merge(tables.candidates[["candidate_id", "domain"]], on="candidate_id")
    junk = scores.groupby("domain").head(N_JUNK).index
    scores["lab_label"] = "clean"
    scores.loc[junk, "lab_label"] = "junk"
    profiles = np.stack(scores["layer_divergence"].to_list())
    profiles[junk, -2:] = 0.0
    con = open_db(folder / "capsel.duckdb")
    for candidate, profile in zip(scores.loc[junk, "candidate_id"], profiles[junk]):
        # d_late as scoring would have stored it from this profile (blocks 8..12)
        con.execute("update divergences set layer_divergence = ?, d_late = ? where candidate_id = ?",
                    [profile.tolist(), float(profile[7:].mean()), candidate])
    con.close()
    scores["layer_divergence"] = list(profiles)
    scores[["candidate_id", "lab_label"]].to_parquet(folder / "scores.parquet")
    return scores


def numpy_position(scores: pd.DataFrame, late: tuple[int, int]) -> tuple[float, float]:
    """Junk median percentile and share below every clean row, with z of a per-domain OLS done in numpy."""
    z = pd.Series(index=scores.index, dtype=float)
    for _, group in scores.groupby("domain"):
        profiles = np.stack(group["layer_divergence"].to_list())
        x = profiles[:, 0:3].mean(axis=1)  # early as stored: blocks 1..floor(0.33*12)
        y = profiles[:, late[0] - 1:late[1]].mean(axis=1)
        beta, alpha = np.polyfit(x, y, 1)
        cap = y - (alpha + beta * x)
        z[group.index] = (cap - cap.mean()) / cap.std(ddof=1)
    clean, junk = z[scores["lab_label"] == "clean"].to_numpy(), z[scores["lab_label"] == "junk"].to_numpy()
    return float(np.median(percentiles_among(junk, clean))), float(np.mean(junk < clean.min()))


@pytest.fixture
def runs(tmp_path):
    return tmp_path, {seed: seed_folder(tmp_path, seed) for seed in (0, 1, 2)}


def test_every_split_of_every_seed_equals_numpy_and_k_is_chosen_on_seed_0(runs):
    root, scores = runs
    result = run_split_sweep(root)
    assert [row["late"] for row in result["per_seed"][0]] == [f"last:{k}" for k in range(1, 7)] + ["0.66"]
    for seed, rows in result["per_seed"].items():
        for row in rows:
            median_pct, below_all = numpy_position(scores[seed], tuple(row["late_layers"]))
            assert row["median_pct"] == pytest.approx(median_pct, abs=1e-9)
            assert row["below_all"] == pytest.approx(below_all, abs=1e-12)
            assert (row["n_clean"], row["n_junk"]) == (72, 8)
    assert result["per_seed"][0][-1]["late_layers"] == [8, 12]
    # the junk's collapsed last two blocks are what a short late window sees best
    assert result["chosen_late"] in ("last:1", "last:2") and result["chosen_on_seed"] == 0
    assert result["reported_seeds"] == [1, 2]
    assert {row["seed"] for row in result["held_out"][result["chosen_late"]]} == {1, 2}
    assert {row["seed"] for row in result["held_out"]["0.66"]} == {1, 2}


def test_k_is_chosen_on_the_named_seed_only(runs):
    root, _ = runs
    on_two = run_split_sweep(root, seeds=[0, 1, 2], choose_on=2)
    rows = [SplitJunk(**{**row, "late_layers": tuple(row["late_layers"])}) for row in on_two["per_seed"][2]]
    assert on_two["chosen_late"] == choose_split(rows).late and on_two["reported_seeds"] == [0, 1]


def test_the_cli_prints_the_table_and_writes_the_json(runs):
    root, _ = runs
    result = CliRunner().invoke(app, ["lab", "split-sweep", "--runs", str(root)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    written = json.loads((root / "split_sweep.json").read_text())
    assert written["chosen_late"] in result.output and "seed 0 (chooses)" in result.output
    missing = CliRunner().invoke(app, ["lab", "split-sweep", "--runs", str(root), "--seeds", "5", "--choose-on", "5"],
                                 env={"COLUMNS": "200"})
    assert isinstance(missing.exception, CapselError) and "capsel lab noise --seeds 5" in str(missing.exception)

