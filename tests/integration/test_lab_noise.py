"""`capsel lab noise` on a small pool: its junk percentiles match a direct computation from the DB's scores."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from capsel.cli.main import app
from capsel.db import open_db
from capsel.models import demo_model_path
from capsel_lab.labels import candidate_labels
from capsel_lab.noise.stats import auc, percentiles_among
from capsel_lab.pretrain_config import world_spec_of
from capsel_lab.scored_pool import clean_pool_spec
from capsel_lab.world.facts import build_world
from capsel_lab.world.pools import build_pool

N_CLEAN, JUNK_SHARE, GUARD = 48, 0.125, 90.0


@pytest.fixture(scope="module")
def noise_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("noise")
    result = CliRunner().invoke(app, ["lab", "noise", "--n-clean", str(N_CLEAN), "--junk-share", str(JUNK_SHARE),
                                      "--seeds", "0", "--seeds", "1", "--ppl-guard", str(GUARD),
                                      "--out", str(root / "noise")],
                                env={"CAPSEL_OUTPUT_ROOT": str(root), "COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return root / "noise", result.output


def _db_scores(folder) -> pd.DataFrame:
    """Straight from the tables: the engine's PPL and exclusions, the view's z."""
    con = open_db(folder / "capsel.duckdb", read_only=True)
    try:
        return con.execute(
            "select d.candidate_id, c.domain, d.excluded_reason, d.ppl, s.z from divergences d "
            "join candidates c using (candidate_id) left join cap_scores s using (candidate_id)"
        ).df()
    finally:
        con.close()


def _pct(value: float, reference: np.ndarray) -> float:
    return 100.0 * (np.sum(reference < value) + 0.5 * np.sum(reference == value)) / len(reference)


def _seed_0(root) -> tuple[dict, pd.DataFrame, list[dict]]:
    """Seed 0's summary, its DB scores with their labels, and its pool records (rebuilt independently)."""
    folder = root / "seed-0"
    records = build_pool(build_world(world_spec_of(demo_model_path())), clean_pool_spec(N_CLEAN, JUNK_SHARE, 0)).candidates
    scores = _db_scores(folder).merge(candidate_labels(records).drop(columns="domain"), on="candidate_id")
    return json.loads((folder / "noise.json").read_text()), scores, records


def test_junk_percentiles_match_numpy_on_the_db_scores(noise_run):
    root, output = noise_run
    summary, scores, records = _seed_0(root)
    assert len(scores) == len(records) == summary["n_candidates"]  # every candidate scored, every one labelled
    eligible = scores[scores["excluded_reason"].isna()]
    clean = eligible[eligible["lab_label"] != "junk"]
    junk = eligible[eligible["lab_label"] == "junk"].sort_values(["domain", "candidate_id"])
    assert len(junk) >= 5 and {r["candidate_id"] for r in summary["junk"]} == set(junk["candidate_id"])
    by_id = {row["candidate_id"]: row for row in summary["junk"]}
    for method, column in (("ppl", "ppl"), ("cap", "z")):
        expected = np.array([_pct(v, clean[column].to_numpy()) for v in junk[column]])
        got = np.array([by_id[cid][f"{method}_pct"] for cid in junk["candidate_id"]])
        np.testing.assert_allclose(got, expected)
        pooled = summary["pooled"][method]
        assert pooled["median"] == pytest.approx(np.median(expected))
        assert (pooled["min"], pooled["max"]) == pytest.approx((expected.min(), expected.max()))
        cut5, cut95 = np.percentile(clean[column], [5, 95], method="inverted_cdf")
        assert pooled["below_p5"] == pytest.approx(np.mean(junk[column].to_numpy() < cut5))
        assert pooled["above_p95"] == pytest.approx(np.mean(junk[column].to_numpy() > cut95))
        assert pooled["above_all"] == pytest.approx(np.mean(junk[column].to_numpy() > clean[column].max()))
    known, learnable = (clean.loc[clean["lab_label"] == label, "z"].to_numpy() for label in ("known", "learnable"))
    pairs = np.array([(l > k) + 0.5 * (l == k) for l in learnable for k in known])
    assert summary["auc_learnable_over_known"] == pytest.approx(pairs.mean())
    assert "where the junk ranks among clean candidates" in output
    assert (root / "seed-0" / "noise.png").stat().st_size > 10_000


def test_the_ppl_guard_and_the_selections_match_numpy(noise_run):
    summary, scores, _ = _seed_0(noise_run[0])
    eligible = scores[scores["excluded_reason"].isna()].copy()
    # the guard: per domain, PPL above the 90th percentile (linear interpolation, as quantile_cont) is held back
    cuts = eligible.groupby("domain")["ppl"].transform(lambda ppl: np.quantile(ppl, GUARD / 100))
    eligible["guarded"] = eligible["ppl"] > cuts
    for label in ("clean", "junk"):
        rows = eligible[eligible["lab_label"] != "junk"] if label == "clean" else eligible[eligible["lab_label"] == "junk"]
        assert summary["guard"][label]["held_back"] == int(rows["guarded"].sum())
    # the guarded CAP selection: 10% of each domain's guarded pool, highest z first
    expected = 0
    for _, rows in eligible[~eligible["guarded"]].groupby("domain"):
        k = int(np.floor(0.10 * len(rows) + 0.5))
        taken = rows.sort_values(["z", "candidate_id"], ascending=[False, True]).head(k)
        expected += int((taken["lab_label"] == "junk").sum())
    assert summary["selections"]["methods"]["cap_guard"]["n_junk"] == expected
    assert summary["selections"]["methods"]["ppl"]["n_junk"] >= summary["selections"]["methods"]["cap"]["n_junk"]


def test_seeds_are_aggregated_from_their_own_runs(noise_run):
    root, output = noise_run
    aggregate = json.loads((root / "noise.json").read_text())["aggregate"]
    per_seed = [json.loads((root / f"seed-{seed}" / "noise.json").read_text()) for seed in (0, 1)]
    cap = aggregate["ranks"]["cap/all junk"]
    assert cap["median"]["per_seed"] == [s["pooled"]["cap"]["median"] for s in per_seed]
    assert cap["median"]["mean"] == pytest.approx(np.mean(cap["median"]["per_seed"]))
    assert cap["n_junk"] == sum(s["pooled"]["cap"]["n_junk"] for s in per_seed)
    for method in ("cap", "cap_guard", "ppl", "random"):
        assert aggregate["selections"][method]["n_junk"] == sum(
            s["selections"]["methods"][method]["n_junk"] for s in per_seed)
    assert (root / "junk_percentiles.png").stat().st_size > 10_000 and "junk taken by each selection" in output


def test_percentiles_among_counts_ties_half():
    reference = np.array([1.0, 2.0, 2.0, 3.0])
    np.testing.assert_allclose(percentiles_among(np.array([0.0, 2.0, 3.0, 4.0]), reference), [0, 50, 87.5, 100])
    assert auc(np.array([2.0]), reference) == pytest.approx(0.5) and np.isnan(auc(np.array([]), reference))
