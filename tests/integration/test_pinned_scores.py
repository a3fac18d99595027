"""CAP's z pinned once per stage (capsel/selection/pinned_scores.py) on a real DuckDB file: the readers that sort only
the ends of the pool (the extreme examples, the report's sample, the picks) against pandas over numpy's z, and the
pin itself: one copy for every reader inside it, gone after it, a leftover of a failed unpin replaced, and one pin
for a run's residualize and select steps."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest

from capsel.config import load_settings
from capsel.db import open_db
from capsel.publish.report import report_points
from capsel.selection.params import SelectionParams
from capsel.selection.pinned_scores import pinned_cap_scores
from capsel.selection.plan import build_selection
from capsel.selection.scoring_key import resolve_scoring_key
from capsel.stages.context import RunContext, run_scope
from capsel.stages.residualize import ResidualizeRequest, residualize
from capsel.stages.select import SelectRequest, select_and_publish
from tests.support.scored_pool import MODEL, make_pool, pinned_rows

# "tiny" scores fewer rows than twice the examples asked: its top and bottom overlap
SIZES = {"code": 70, "math": 90, "tiny": 5}
N_SCORED = sum(SIZES.values()) - len(SIZES)  # one excluded per domain


@pytest.fixture
def store(tmp_path):
    con = open_db(tmp_path / "capsel.duckdb")
    tables = make_pool(con, SIZES, seed=5, n_excluded=1)
    make_pool(con, SIZES, seed=6, model="fp-model-b", with_candidates=False)
    yield con, tables
    con.close()


def numpy_z(tables) -> pd.DataFrame:
    """candidate_id, domain, d_early, d_late, cap and z of the first model, from np.polyfit per domain."""
    scored = tables.divergences[
        (tables.divergences["model_fingerprint"] == MODEL) & tables.divergences["excluded_reason"].isna()
    ].merge(tables.candidates[["candidate_id", "domain"]], on="candidate_id")
    frames = []
    for _, group in scored.groupby("domain"):
        x, y = group["d_early"].to_numpy(float), group["d_late"].to_numpy(float)
        beta, alpha = np.polyfit(x, y, 1)
        cap = y - (alpha + beta * x)
        frames.append(group[["candidate_id", "domain"]].assign(
            d_early=x, d_late=y, cap=cap, z=(cap - cap.mean()) / cap.std(ddof=1)))
    return pd.concat(frames, ignore_index=True)


def test_the_extreme_examples_are_the_ends_of_numpy_z(store):
    con, tables = store
    key = resolve_scoring_key(con, model=MODEL)
    examples = residualize(ResidualizeRequest(key, n_examples=3), RunContext(con, load_settings())).examples
    expected = []
    for domain, group in numpy_z(tables).groupby("domain"):
        top = group.sort_values(["z", "candidate_id"], ascending=[False, True]).head(3)
        bottom = group.sort_values(["z", "candidate_id"], ascending=[True, True]).head(3)
        bottom = bottom[~bottom["candidate_id"].isin(top["candidate_id"])]
        expected += [(domain, "top", cid) for cid in top["candidate_id"]]
        expected += [(domain, "bottom", cid) for cid in bottom["candidate_id"]]
    got = [(row["domain"], row["side"], row["candidate_id"]) for row in examples]
    assert sorted(got) == sorted(expected)
    assert len(got) == 6 + 6 + 4


def test_the_report_sample_is_the_smallest_md5_of_each_domain(store):
    con, tables = store
    key = resolve_scoring_key(con, model=MODEL)
    points = report_points(con, key, list(SIZES), max_points=25)
    reference = numpy_z(tables)
    for domain, group in reference.groupby("domain"):
        ids = sorted(group["candidate_id"], key=lambda cid: (hashlib.md5(cid.encode()).hexdigest(), cid))[:25]
        mine = points[points["domain"] == domain]
        assert mine["candidate_id"].tolist() == sorted(ids)
        assert set(mine["n_pool"]) == {len(group)}
        np.testing.assert_allclose(mine["z"], group.set_index("candidate_id").loc[sorted(ids), "z"], rtol=1e-9)


@pytest.mark.parametrize("seed", [None, 11])
def test_the_picks_sort_only_the_top_and_match_pandas(store, seed):
    con, tables = store
    key = resolve_scoring_key(con, model=MODEL)
    method = "cap" if seed is None else "random"
    selection = build_selection(con, SelectionParams(method=method, budget="9", seed=seed or 0), key)
    expected = []
    for _, group in numpy_z(tables).groupby("domain"):
        if seed is None:
            group = group.sort_values(["z", "candidate_id"], ascending=[False, True])
        else:
            group = group.assign(draw=[hashlib.md5(f"{seed}:{cid}".encode()).hexdigest() for cid in group["candidate_id"]])
            group = group.sort_values(["draw", "candidate_id"])
        expected += group["candidate_id"].head(9).tolist()
    assert selection.members["candidate_id"].tolist() == expected


def test_readers_inside_one_pin_share_its_copy_and_it_is_gone_after(store):
    con, tables = store
    key = resolve_scoring_key(con, model=MODEL)
    top_id = numpy_z(tables).query("domain == 'math'").sort_values("z").iloc[-1]["candidate_id"]
    with pinned_cap_scores(con, key):
        before = report_points(con, key, ["math"], max_points=1000).set_index("candidate_id")["z"]
        # the scores move under the pin: the readers inside it keep reading the pinned copy
        con.execute("update divergences set d_late = d_late - 5 where candidate_id = ? and model_fingerprint = ?",
                    [top_id, MODEL])
        inside = report_points(con, key, ["math"], max_points=1000).set_index("candidate_id")["z"]
        pd.testing.assert_series_equal(inside, before)
        assert pinned_rows(con) == N_SCORED
    assert pinned_rows(con) == 0
    after = report_points(con, key, ["math"], max_points=1000).set_index("candidate_id")["z"]
    assert after[top_id] < before[top_id] - 1  # read afresh, the moved score shows


def test_a_pin_replaces_what_a_failed_unpin_left(store):
    con, tables = store
    key = resolve_scoring_key(con, model=MODEL)
    with pinned_cap_scores(con, key):
        expected = report_points(con, key, list(SIZES), max_points=1000)
    # a copy whose unpin failed with its transaction, and whose scores have moved since
    con.execute("insert into cap_scores_pinned select cap_scores_pin_of(model_fingerprint, config_hash, null, null, "
                "null, null), candidate_id, domain, d_early, d_late, cap, z + 1 from cap_scores "
                "where model_fingerprint = ?", [MODEL])
    pd.testing.assert_frame_equal(report_points(con, key, list(SIZES), max_points=1000), expected)


def test_a_runs_select_step_reads_the_z_its_residualize_step_pinned(store, tmp_path):
    con, tables = store
    key = resolve_scoring_key(con, model=MODEL)
    ctx = RunContext(con, load_settings(db_path=tmp_path / "capsel.duckdb", output_root=tmp_path))
    reference = numpy_z(tables).query("domain == 'math'").sort_values(["z", "candidate_id"], ascending=[False, True])
    lowest = reference["candidate_id"].iloc[-1]
    with run_scope(ctx) as in_run:
        fitted = residualize(ResidualizeRequest(key), in_run)
        assert pinned_rows(con) == N_SCORED  # held past the step, for the next one
        # the lowest moves to the top after the pin: a select step that computed z afresh would pick it
        con.execute("update divergences set d_late = d_late + 5 where candidate_id = ? and model_fingerprint = ?",
                    [lowest, MODEL])
        request = SelectRequest(SelectionParams(budget="9", domains=["math"]), tmp_path / "out", key=key,
                                fits=tuple(fitted.fits))
        picked = select_and_publish(request, in_run).selection.members["candidate_id"].tolist()
        assert pinned_rows(con) == N_SCORED
    assert picked == reference["candidate_id"].head(9).tolist()
    assert pinned_rows(con) == 0  # let go with the run
    # a stage run by itself pins for its own time, and reads the moved score
    alone = select_and_publish(SelectRequest(SelectionParams(budget="9", domains=["math"], model=MODEL),
                                             tmp_path / "out"), ctx)
    assert lowest in alone.selection.members["candidate_id"].tolist()
    assert pinned_rows(con) == 0
