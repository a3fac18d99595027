"""Selecting by a baseline's stored score: order, ties, exclusions, the method-aware gate and the manifest."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from capsel.db import open_db
from capsel.errors import CapselError
from capsel.publish.excluded import EXCLUDED_FILE
from capsel.publish.publish import publish_selection
from capsel.selection.params import SelectionParams
from capsel.selection.plan import build_selection
from capsel.selection.scoring_key import resolve_scoring_key
from tests.support.gate_refusal import refused
from tests.support.scored_pool import make_pool

SCORER = "fp-scorer"
CONFIG = "cfg-ppl"


@pytest.fixture
def store(tmp_path):
    con = open_db(tmp_path / "capsel.duckdb")
    tables = make_pool(con, {"code": 30, "math": 41})
    rng = np.random.default_rng(3)
    candidates = tables.candidates
    scores = pd.DataFrame({
        "candidate_id": candidates["candidate_id"],
        "method": "ppl",
        "model_fingerprint": SCORER,
        "config_hash": CONFIG,
        # rounded so equal scores occur and ties must fall to candidate_id
        "score": np.round(rng.uniform(1, 50, len(candidates)), 0),
        "excluded_reason": np.where(np.arange(len(candidates)) % 10 == 0, "short_response", None),
        "run_id": "run-ppl",
    })
    scores.loc[scores["excluded_reason"].notna(), "score"] = None
    con.append("method_scores", scores, by_name=True)
    con.append("models", pd.DataFrame([{"model_fingerprint": SCORER, "name_or_path": "/models/lm", "dtype": "float32"}]),
               by_name=True)
    con.append("scoring_configs", pd.DataFrame([{"config_hash": CONFIG, "config": '{"kind": "ppl"}'}]), by_name=True)
    scores["domain"] = candidates["domain"]
    yield con, scores, tmp_path / "out"
    con.close()


def expected_members(scores: pd.DataFrame, order: str, k: int) -> dict[str, list[str]]:
    """Reference order in pandas: sort keys built independently of the SQL."""
    result = {}
    for domain, frame in scores[scores["excluded_reason"].isna()].groupby("domain"):
        frame = frame.copy()
        if order == "high":
            frame["key"] = -frame["score"]
        elif order == "low":
            frame["key"] = frame["score"]
        else:
            ranks = frame["score"].rank(method="min") - 1  # percent_rank: (rank - 1) / (n - 1)
            frame["key"] = (ranks / (len(frame) - 1) - 0.5).abs()
        result[domain] = frame.sort_values(["key", "candidate_id"])["candidate_id"].head(k).tolist()
    return result


@pytest.mark.parametrize("order", ["high", "low", "middle"])
def test_ppl_selection_follows_the_direction_with_ties_by_id(store, order):
    con, scores, _ = store
    key = resolve_scoring_key(con, method="ppl")
    assert (key.model_fingerprint, key.config_hash, key.n_eligible) == (SCORER, CONFIG, 71 - 8)
    selection = build_selection(con, SelectionParams(budget="7", method="ppl", order=order), key)
    members = selection.members
    for domain, ids in expected_members(scores, order, 7).items():
        chosen = members[members["domain"] == domain].sort_values("rank")
        assert chosen["candidate_id"].tolist() == ids
        np.testing.assert_array_equal(chosen["score"], scores.set_index("candidate_id").loc[ids, "score"])
    assert {pool.domain: pool.n_excluded for pool in selection.pools} == {"code": 3, "math": 5}
    assert order in selection.rule or (order == "high" and "highest" in selection.rule)


def test_a_baseline_selection_publishes_through_the_gate_without_z(store):
    con, scores, out_dir = store
    key = resolve_scoring_key(con, method="ppl")
    selection = build_selection(con, SelectionParams(budget="10%", method="ppl", order="middle"), key)
    assert selection.fits == [] and selection.members["z"].isna().all()
    published = publish_selection(con, selection, out_dir)
    manifest = published.manifest
    assert manifest["gate"]["success"] and manifest["method"] == "ppl"
    assert manifest["model"]["fingerprint"] == SCORER and manifest["scoring_config"]["config_hash"] == CONFIG
    assert manifest["request"]["order"] == "middle" and "median" in manifest["selection_rule"]
    stored = con.execute("select candidate_id, score from selection_members").df().set_index("candidate_id")
    np.testing.assert_array_equal(stored.loc[selection.members["candidate_id"], "score"],
                                  selection.members["score"])
    parquet = pd.read_parquet(published.path / "data.parquet")
    np.testing.assert_array_equal(parquet["score"], selection.members["score"])
    assert "selection rule: ppl: nearest the domain's median" in (published.path / "README.md").read_text()


def test_the_gate_still_checks_baseline_scores_and_exclusions(store):
    con, scores, out_dir = store
    key = resolve_scoring_key(con, method="ppl")
    selection = build_selection(con, SelectionParams(budget="5", method="ppl"), key)
    excluded = scores.loc[scores["excluded_reason"].notna(), "candidate_id"].iloc[0]
    members = selection.members.copy()
    members.loc[0, "candidate_id"] = excluded  # an excluded candidate slipped in, with no score
    members.loc[0, "score"] = np.nan
    failure = refused(con, selection, members, out_dir, "expect_column_values_to_not_be_null(column='score')",
                      "expect_column_values_to_be_null(column='excluded_reason')")
    assert "z_mean" not in str(failure)


def test_each_method_reads_only_its_own_scores(store):
    con, _, _ = store
    with pytest.raises(CapselError, match="no ifd scores.*score-baseline --method ifd"):
        resolve_scoring_key(con, method="ifd")
    cap_key = resolve_scoring_key(con)  # make_pool's CAP divergences are still the cap pair
    assert cap_key.method == "cap" and cap_key.model_fingerprint != SCORER
    with pytest.raises(ValidationError, match=r"order \(--ppl-direction\) applies to the ppl baseline only, not to cap"):
        SelectionParams(budget="5", method="cap", order="low")


@pytest.mark.parametrize("order", ["low", "middle"])
def test_excluded_rows_of_a_baseline_selection_rank_in_its_order(store, order):
    con, scores, out = store
    key = resolve_scoring_key(con, method="ppl")
    selection = build_selection(con, SelectionParams(budget="7", method="ppl", order=order), key)
    excluded = pd.read_parquet(publish_selection(con, selection, out).path / EXCLUDED_FILE)
    assert set(excluded["stage"]) == {"excluded", "below_cut"}
    assert set(excluded[excluded["stage"] == "excluded"]["candidate_id"]) == set(
        scores[scores["excluded_reason"].notna()]["candidate_id"])
    below = excluded[excluded["stage"] == "below_cut"]
    for domain, everyone in expected_members(scores, order, k=10**6).items():
        rows = below[below["domain"] == domain]
        if order == "low":  # a score order ranks every eligible row: members 1..7, the rest after them
            assert rows.sort_values("rank")["candidate_id"].tolist() == everyone[7:]
            assert sorted(rows["rank"]) == list(range(8, 8 + len(rows))) and set(rows["cut_rank"]) == {7}
        else:  # the middle band has no single order to rank by
            assert set(rows["candidate_id"]) == set(everyone[7:]) and rows["rank"].isna().all()
        np.testing.assert_array_equal(
            rows["score"], scores.set_index("candidate_id").loc[rows["candidate_id"], "score"])
