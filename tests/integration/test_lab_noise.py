"""`capsel lab noise` on a small pool: its junk percentiles match a direct computation from the DB's scores."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from capsel.cli.main import app
from capsel.db import open_db
from capsel.lab.labels import candidate_labels
from capsel.lab.noise.experiment import NoiseSpec
from capsel.lab.noise.stats import auc, percentiles_among
from capsel.lab.pretrain import world_spec_of
from capsel.lab.world.facts import build_world
from capsel.lab.world.pools import build_pool
from capsel.models import demo_model_path

N_CLEAN, JUNK_SHARE = 48, 0.125


@pytest.fixture(scope="module")
def noise_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("noise")
    result = CliRunner().invoke(app, ["lab", "noise", "--n-clean", str(N_CLEAN), "--junk-share", str(JUNK_SHARE),
                                      "--out", "noise"], env={"CAPSEL_OUTPUT_ROOT": str(root), "COLUMNS": "200"})
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


def test_junk_percentiles_match_numpy_on_the_db_scores(noise_run):
    folder, output = noise_run
    summary = json.loads((folder / "noise.json").read_text())
    records = build_pool(build_world(world_spec_of(demo_model_path())), NoiseSpec(N_CLEAN, JUNK_SHARE).pool_spec()).candidates
    scores = _db_scores(folder).merge(candidate_labels(records).drop(columns="domain"), on="candidate_id")
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
        cut5 = np.percentile(clean[column], 5)
        assert pooled["below_p5"] == pytest.approx(np.mean(junk[column].to_numpy() < cut5))
        assert pooled["above_all"] == pytest.approx(np.mean(junk[column].to_numpy() > clean[column].max()))
    known, learnable = (clean.loc[clean["lab_label"] == label, "z"].to_numpy() for label in ("known", "learnable"))
    pairs = np.array([(l > k) + 0.5 * (l == k) for l in learnable for k in known])
    assert summary["auc_learnable_over_known"] == pytest.approx(pairs.mean())
    assert "junk percentile among clean candidates" in output and (folder / "noise.png").stat().st_size > 10_000


def test_percentiles_among_counts_ties_half():
    reference = np.array([1.0, 2.0, 2.0, 3.0])
    np.testing.assert_allclose(percentiles_among(np.array([0.0, 2.0, 3.0, 4.0]), reference), [0, 50, 87.5, 100])
    assert auc(np.array([2.0]), reference) == pytest.approx(0.5) and np.isnan(auc(np.array([]), reference))
