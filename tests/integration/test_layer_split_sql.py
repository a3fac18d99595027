"""`select --early/--late` in SQL on a real DuckDB file: D_early and D_late re-averaged from the stored profile,
the OLS residual, z and the members, against numpy on the same rows; the stored split reads what was stored."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from capsel.config import load_settings
from capsel.db import open_db, run_sql
from capsel.errors import CapselError, OptionError
from capsel.selection.params import SelectionParams
from capsel.selection.pinned_scores import pinned_cap_scores
from capsel.selection.plan import build_selection
from capsel.selection.residualize import fit_domains
from capsel.selection.scoring_key import ScoringKey, resolve_scoring_key, with_layer_split
from capsel.stages.context import RunContext
from capsel.stages.residualize import ResidualizeRequest, residualize
from capsel.stages.select import SelectRequest, select_and_publish, selection_key
from tests.support.scored_pool import MODEL, make_pool

SIZES = {"code": 40, "math": 60}
N_LAYERS = 12


@pytest.fixture
def store(tmp_path):
    con = open_db(tmp_path / "capsel.duckdb")
    tables = make_pool(con, SIZES, seed=3, n_excluded=2, n_layers=N_LAYERS)
    # another model's profiles of the same candidates must stay out of the first one's fit
    make_pool(con, SIZES, seed=4, model="fp-model-b", with_candidates=False, n_layers=N_LAYERS)
    yield con, tables
    con.close()


def numpy_cap(tables, early: tuple[int, int], late: tuple[int, int]) -> pd.DataFrame:
    """Per candidate: D_early, D_late over the 1-indexed inclusive blocks, CAP and z of its domain's OLS."""
    scored = tables.divergences[
        (tables.divergences["model_fingerprint"] == MODEL) & tables.divergences["excluded_reason"].isna()
    ].merge(tables.candidates[["candidate_id", "domain"]], on="candidate_id")
    frames = []
    for _, group in scored.groupby("domain"):
        profiles = np.stack(group["layer_divergence"].to_list())
        x = profiles[:, early[0] - 1:early[1]].mean(axis=1)
        y = profiles[:, late[0] - 1:late[1]].mean(axis=1)
        beta, alpha = np.polyfit(x, y, 1)
        cap = y - (alpha + beta * x)
        frames.append(pd.DataFrame({"candidate_id": group["candidate_id"], "domain": group["domain"],
                                    "d_early": x, "d_late": y, "cap": cap,
                                    "z": (cap - cap.mean()) / cap.std(ddof=1), "alpha": alpha, "beta": beta}))
    return pd.concat(frames).set_index("candidate_id").sort_index()


def select(con, budget: str = "7", **split):
    key = resolve_scoring_key(con, model=MODEL)
    return build_selection(con, SelectionParams(budget=budget, **split), key)


@pytest.mark.parametrize(
    ("early", "late", "early_blocks", "late_blocks"),
    [(None, "last:3", (1, 3), (10, 12)), ("first:2", "9-11", (1, 2), (9, 11)), ("0.25", "0.8", (1, 3), (10, 12))],
)
def test_a_new_split_equals_numpy_on_the_stored_profile(store, early, late, early_blocks, late_blocks):
    con, tables = store
    expected = numpy_cap(tables, early_blocks, late_blocks)
    key = with_layer_split(con, resolve_scoring_key(con, model=MODEL), early, late)
    assert (key.layers.early, key.layers.late) == (early_blocks, late_blocks)

    got = run_sql(con, "scoring/cap_scores", {"model_fingerprint": MODEL, "config_hash": key.config_hash,
                                              "domains": None, **resolve_scoring_key(con, model=MODEL).layer_params()})
    got = got.df().set_index("candidate_id").sort_index()
    exported = run_sql(con, "scoring/cap_scores", {"model_fingerprint": MODEL, "config_hash": key.config_hash,
                                                   "domains": None, **key.layer_params()}).df()
    np.testing.assert_allclose(exported.set_index("candidate_id").sort_index()["z"], expected["z"], rtol=1e-9)
    with pinned_cap_scores(con, key):
        split = run_sql(con, "selection/select_cap_pool", {
            "quotas": [{"domain": domain, "k": 10_000} for domain in SIZES], "use_scores": True,
            "model_fingerprint": MODEL, "config_hash": key.config_hash, "seed": None, "ppl_guard": None,
            "ppl_guard_z": None, **key.layer_params(),
        }).df().set_index("candidate_id").sort_index()
    assert list(split.index) == list(expected.index)
    for column in ("d_early", "d_late", "cap", "z"):
        np.testing.assert_allclose(split[column], expected[column], rtol=1e-9, atol=1e-12)
    # the stored d_early/d_late (the view) are not these: the split really moved the scores
    assert not np.allclose(got["z"], split["z"])

    fits = {fit.domain: fit for fit in fit_domains(con, key)}
    for domain, group in expected.groupby("domain"):
        assert fits[domain].alpha == pytest.approx(group["alpha"].iloc[0], rel=1e-9)
        assert fits[domain].beta == pytest.approx(group["beta"].iloc[0], rel=1e-9)

    selection = select(con, early=early, late=late)
    ranked = expected.reset_index().sort_values(["domain", "z", "candidate_id"], ascending=[True, False, True])
    wanted = ranked.groupby("domain").head(7)
    assert selection.members["candidate_id"].tolist() == wanted["candidate_id"].tolist()
    np.testing.assert_allclose(selection.members["z"], wanted["z"], rtol=1e-9, atol=1e-12)
    assert selection.key.layers.recomputed and "re-averaged from the stored per-layer profile" in selection.rule


@pytest.mark.parametrize(("early", "late"), [(None, "0.66"), ("first:3", "8-12"), ("0.33", "last:5")])
def test_the_stored_split_however_named_selects_bit_for_bit_as_before(store, early, late):
    con, tables = store
    before, after = select(con), select(con, early=early, late=late)
    stored = tables.divergences[tables.divergences["model_fingerprint"] == MODEL].set_index("candidate_id")
    for column in ("d_early", "d_late"):  # exactly what scoring wrote, not a re-average of the profile
        assert after.members[column].tolist() == stored.loc[after.members["candidate_id"], column].tolist()
    assert after.key.layer_params() == before.key.layer_params() == dict.fromkeys(
        ("early_first", "early_last", "late_first", "late_last"))
    pd.testing.assert_frame_equal(after.members, before.members, check_exact=True)
    assert [fit.as_dict() for fit in after.fits] == [fit.as_dict() for fit in before.fits]
    assert after.rule == before.rule


def test_random_control_reads_the_split_and_a_baseline_refuses_it(store):
    con, tables = store
    random = build_selection(con, SelectionParams(budget="5", method="random", late="last:3"),
                             resolve_scoring_key(con, model=MODEL))
    expected = numpy_cap(tables, (1, 3), (10, 12))
    np.testing.assert_allclose(random.members["z"], expected.loc[random.members["candidate_id"], "z"], rtol=1e-9)
    assert random.key.layers.late == (10, 12)
    with pytest.raises(OptionError, match="apply to cap and random"):
        with_layer_split(con, ScoringKey(MODEL, "cfg-ppl", method="ppl"), None, "0.7")


def test_rows_without_a_profile_are_one_clean_error(tmp_path):
    con = open_db(tmp_path / "capsel.duckdb")
    make_pool(con, SIZES, n_excluded=2)  # scored before profiles: none stored
    with pytest.raises(CapselError, match=r"96 of 96 eligible rows of model fp-model-a, config cfg-aaaa store no "
                                          r"per-layer profile") as caught:
        select(con, late="last:3")
    assert "\n" not in str(caught.value)
    assert len(select(con).members) == 14  # without the options nothing changes
    con.close()


def test_the_split_is_checked_against_the_stored_depth(store):
    con, _ = store
    with pytest.raises(OptionError, match=r"late last:20 gives blocks -7 to 12, outside the stored profile's 1-12"):
        select(con, late="last:20")
    with pytest.raises(OptionError, match="overlaps"):
        select(con, early="first:9", late="last:4")


def test_the_flows_selection_parameters_fit_and_select_the_split(store, tmp_path):
    con, tables = store
    params = SelectionParams(budget="4", late="last:3")
    request = SelectRequest(params.model_copy(update={"model": MODEL}), tmp_path / "out")
    ctx = RunContext(con, load_settings(db_path=tmp_path / "capsel.duckdb", output_root=tmp_path))
    key = selection_key(ctx, request)  # what the flow's residualize step and its select step both get
    expected = numpy_cap(tables, (1, 3), (10, 12))
    fits = {fit.domain: fit for fit in residualize(ResidualizeRequest(key), ctx).fits}
    for domain, group in expected.groupby("domain"):
        assert fits[domain].beta == pytest.approx(group["beta"].iloc[0], rel=1e-9)
    summary = select_and_publish(replace(request, key=key), ctx)
    assert summary.published.manifest["layer_split"]["late_layers"] == [10, 12]
    assert summary.published.manifest["request"]["late"] == "last:3"
