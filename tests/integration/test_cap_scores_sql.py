"""CAP in SQL (sql/selection/residualize.sql, sql/scoring/cap_scores.sql) against numpy's OLS on the same rows."""

import numpy as np
import pandas as pd
import pytest

from capsel.db import open_db, run_sql
from capsel.errors import CapselError
from capsel.selection.pool import domain_pools
from capsel.selection.residualize import fit_domains
from capsel.selection.scoring_key import STORED_SPLIT, resolve_scoring_key
from tests.support.scored_pool import CONFIG, MODEL, make_pool

SIZES = {"code": 40, "math": 60, "science": 25}


@pytest.fixture
def store():
    con = open_db(":memory:")
    tables = make_pool(con, SIZES, seed=1, n_excluded=2)
    # a second model scored the same candidates: its numbers must not leak into the first one's fit
    other = make_pool(con, SIZES, seed=2, model="fp-model-b", with_candidates=False)
    yield con, tables, other
    con.close()


def numpy_reference(tables, model=MODEL):
    """Per domain: alpha, beta, r² from np.polyfit and lstsq; CAP and z per candidate."""
    scores = tables.divergences[
        (tables.divergences["model_fingerprint"] == model) & tables.divergences["excluded_reason"].isna()
    ].merge(tables.candidates[["candidate_id", "domain"]], on="candidate_id")
    fits, rows = {}, []
    for domain, group in scores.groupby("domain"):
        x = group["d_early"].to_numpy(float)
        y = group["d_late"].to_numpy(float)
        beta, alpha = np.polyfit(x, y, 1)
        design = np.column_stack([np.ones_like(x), x])
        (alpha_ls, beta_ls), *_ = np.linalg.lstsq(design, y, rcond=None)
        assert np.allclose([alpha, beta], [alpha_ls, beta_ls])
        r2 = np.corrcoef(x, y)[0, 1] ** 2
        cap = y - (alpha + beta * x)
        z = (cap - cap.mean()) / cap.std(ddof=1)
        fits[domain] = (len(x), alpha, beta, r2)
        rows.append(pd.DataFrame({"candidate_id": group["candidate_id"], "cap": cap, "z": z}))
    return fits, pd.concat(rows).set_index("candidate_id").sort_index()


def test_domain_fits_equal_numpy_ols(store):
    con, tables, _ = store
    key = resolve_scoring_key(con, model=MODEL)
    expected, _ = numpy_reference(tables)
    fits = {fit.domain: fit for fit in fit_domains(con, key)}
    assert set(fits) == set(SIZES)
    for domain, (n, alpha, beta, r2) in expected.items():
        fit = fits[domain]
        assert fit.n_eligible == n == SIZES[domain] - 2
        assert fit.alpha == pytest.approx(alpha, rel=1e-9)
        assert fit.beta == pytest.approx(beta, rel=1e-9)
        assert fit.r2 == pytest.approx(r2, rel=1e-9)
        assert fit.z_mean == pytest.approx(0.0, abs=1e-12)
        assert fit.z_std == pytest.approx(1.0, rel=1e-12)


def test_cap_and_z_per_candidate_equal_numpy(store):
    con, tables, _ = store
    _, expected = numpy_reference(tables)
    got = run_sql(con, "scoring/cap_scores", {"model_fingerprint": MODEL, "config_hash": CONFIG, "domains": None,
                                              **STORED_SPLIT}).df()
    got = got.set_index("candidate_id").sort_index()
    # excluded candidates are not scored at all
    assert list(got.index) == list(expected.index)
    np.testing.assert_allclose(got["cap"], expected["cap"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got["z"], expected["z"], rtol=1e-9, atol=1e-12)


def test_cap_scores_export_covers_every_pair(store):
    con, _, other = store
    every = run_sql(con, "scoring/cap_scores", {"model_fingerprint": None, "config_hash": None, "domains": None,
                                                **STORED_SPLIT}).df()
    assert set(every["model_fingerprint"]) == {MODEL, "fp-model-b"}
    _, expected_b = numpy_reference(other, model="fp-model-b")
    only_b = every[every["model_fingerprint"] == "fp-model-b"].set_index("candidate_id").sort_index()
    np.testing.assert_allclose(only_b["z"], expected_b["z"], rtol=1e-9, atol=1e-12)


def test_several_scored_pairs_need_a_choice(store):
    con, _, _ = store
    with pytest.raises(CapselError, match="several") as caught:
        resolve_scoring_key(con)
    assert MODEL in str(caught.value) and "fp-model-b" in str(caught.value)
    by_path = resolve_scoring_key(con, model=f"/models/{MODEL}", config_hash=CONFIG)
    assert by_path.model_fingerprint == MODEL
    with pytest.raises(CapselError, match="no cap scores for model"):
        resolve_scoring_key(con, model=MODEL, config_hash="other")


def test_unknown_domain_is_named(store):
    con, _, _ = store
    key = resolve_scoring_key(con, model=MODEL)
    with pytest.raises(CapselError, match=r"biology.*known domains: \['code', 'math', 'science'\]"):
        domain_pools(con, key, ["math", "biology"])


@pytest.mark.parametrize(
    ("d_early", "d_late", "message"),
    [
        ([0.3], [0.4], r"only 1 eligible .* at least 3"),
        ([0.3, 0.5], [0.4, 0.2], r"only 2 eligible .* at least 3"),
        ([0.2, 0.2, 0.2, 0.2], [0.1, 0.3, 0.2, 0.5], r"d_early is the same for all 4"),
        ([0.1, 0.2, 0.3, 0.4], [0.25, 0.45, 0.65, 0.85], r"exact linear function"),
        ([0.1, float("nan"), 0.3, 0.4], [0.2, 0.3, 0.1, 0.5], r"1 eligible candidates have a missing"),
        # the finding: one value off by 1e-13 used to publish alpha ~ -1.8e12
        ([0.2] * 9 + [0.2 + 1e-13], [0.1, 0.3, 0.2, 0.5, 0.4, 0.1, 0.3, 0.2, 0.5, 0.4],
         r"d_early barely varies \(std/\|mean\| = 1\.6e-13, under 1e-06\)"),
    ],
    ids=["one-candidate", "two-candidates", "constant-d_early", "exact-line", "nan-d_early", "near-constant-d_early"],
)
def test_degenerate_domain_gives_a_clear_error(d_early, d_late, message):
    con = open_db(":memory:")
    make_pool(con, {"math": 30}, fixed={"tiny": (d_early, d_late)})
    key = resolve_scoring_key(con)
    with pytest.raises(CapselError, match=message) as caught:
        fit_domains(con, key)
    text = str(caught.value)
    assert "'tiny'" in text and "math" not in text
    # naming the healthy domains is the way out the message offers
    assert "--domain" in text or "rescore" in text
    assert [fit.domain for fit in fit_domains(con, key, ["math"])] == ["math"]


def test_a_small_but_real_spread_fits_as_numpy_does():
    con = open_db(":memory:")
    rng = np.random.default_rng(4)
    d_early = 0.3 + 0.3 * 1e-4 * rng.standard_normal(40)  # relative spread 1e-4: a hundred times the threshold
    d_late = 0.2 + 2.0 * d_early + rng.normal(0.0, 1e-4, 40)
    make_pool(con, {}, fixed={"narrow": (d_early.tolist(), d_late.tolist())})
    [fit] = fit_domains(con, resolve_scoring_key(con))
    beta, alpha = np.polyfit(d_early, d_late, 1)
    assert fit.alpha == pytest.approx(alpha, rel=1e-6) and fit.beta == pytest.approx(beta, rel=1e-6)
    assert fit.early_relative_spread == pytest.approx(d_early.std(ddof=1) / d_early.mean(), rel=1e-9)
