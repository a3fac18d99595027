"""`--ppl-guard P`: per domain, CAP's candidates above the P-th percentile of PPL are not eligible."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from capsel.db import open_db
from capsel.errors import CapselError
from capsel.selection.params import SelectionParams
from capsel.selection.plan import build_selection
from capsel.selection.residualize import fit_domains
from capsel.selection.scoring_key import resolve_scoring_key
from tests.support.scored_pool import make_pool

SIZES = {"code": 41, "math": 120}
N_EXCLUDED = 3


@pytest.fixture
def store():
    con = open_db(":memory:")
    tables = make_pool(con, SIZES, seed=5, n_excluded=N_EXCLUDED)
    yield con, tables
    con.close()


def robust_z_passes(ppl: np.ndarray, guard_z: float) -> np.ndarray:
    """Log PPL within `guard_z` robust standard deviations (1.4826 x MAD) above the median, computed plainly."""
    log_ppl = np.log(ppl)
    median = np.median(log_ppl)
    return (log_ppl - median) / (1.4826 * np.median(np.abs(log_ppl - median))) <= guard_z


def numpy_reference(tables, guard: float | None, share: float, guard_z: float | None = None) -> dict[str, list[str]]:
    """Per domain: drop exclusions, hold back PPL above np.quantile (linear, = quantile_cont) or above the robust z,
    take top z."""
    scores = tables.divergences.merge(tables.candidates[["candidate_id", "domain"]], on="candidate_id")
    scores = scores[scores["excluded_reason"].isna()]
    expected = {}
    for domain, rows in scores.groupby("domain"):
        d_early, d_late = rows["d_early"].astype(float).to_numpy(), rows["d_late"].astype(float).to_numpy()
        beta, alpha = np.polyfit(d_early, d_late, 1)
        cap = d_late - (alpha + beta * d_early)
        z = (cap - cap.mean()) / cap.std(ddof=1)  # over the whole scored pool: the guard does not refit
        ppl = rows["ppl"].to_numpy()
        passes = ppl <= np.quantile(ppl, guard / 100) if guard is not None else np.ones(len(ppl), dtype=bool)
        if guard_z is not None:
            passes &= robust_z_passes(ppl, guard_z)
        ids = rows["candidate_id"].to_numpy()
        k = int(np.floor(share * passes.sum() + 0.5))  # the budget applies to the guarded pool
        order = sorted(np.flatnonzero(passes), key=lambda i: (-z[i], ids[i]))
        expected[domain] = [ids[i] for i in order[:k]]
    return expected


@pytest.mark.parametrize("guard", [50, 90, 97.5])
def test_guarded_cap_selection_equals_numpy(store, guard):
    con, tables = store
    selection = build_selection(con, SelectionParams(budget="20%", ppl_guard=guard), resolve_scoring_key(con))
    expected = numpy_reference(tables, guard, 0.20)
    for domain, ids in expected.items():
        assert selection.members.loc[selection.members["domain"] == domain, "candidate_id"].tolist() == ids
    for pool in selection.pools:
        eligible = SIZES[pool.domain] - N_EXCLUDED
        assert pool.n_guarded == eligible - pool.n_eligible > 0
    assert selection.request.record()["ppl_guard"] == guard
    assert "PPL guard" in selection.rule
    assert any("the PPL guard holds back" in note for note in selection.notes)


@pytest.mark.parametrize(("guard", "guard_z"), [(None, 0.5), (None, 0.85), (90, 0.7)])
def test_robust_z_guard_equals_numpy(store, guard, guard_z):
    con, tables = store
    request = SelectionParams(budget="20%", ppl_guard=guard, ppl_guard_z=guard_z)
    selection = build_selection(con, request, resolve_scoring_key(con))
    expected = numpy_reference(tables, guard, 0.20, guard_z)
    for domain, ids in expected.items():
        assert selection.members.loc[selection.members["domain"] == domain, "candidate_id"].tolist() == ids
    assert sum(pool.n_guarded for pool in selection.pools) > 0
    assert selection.request.record()["ppl_guard_z"] == guard_z
    assert "robust PPL guard" in selection.rule and any("robust z of log PPL" in note for note in selection.notes)


def test_without_a_guard_the_paper_selection_is_unchanged(store):
    con, tables = store
    selection = build_selection(con, SelectionParams(budget="20%"), resolve_scoring_key(con))
    assert all(pool.n_guarded == 0 for pool in selection.pools)
    assert "PPL guard" not in selection.rule
    # with a guard at the 100th percentile nothing would be held back: the reference with guard 100 is the paper's
    for domain, ids in numpy_reference(tables, 100, 0.20).items():
        assert selection.members.loc[selection.members["domain"] == domain, "candidate_id"].tolist() == ids


def test_random_control_draws_only_from_the_guarded_pool(store):
    con, tables = store
    selection = build_selection(con, SelectionParams(budget="50%", method="random", ppl_guard=60),
                                resolve_scoring_key(con))
    scores = tables.divergences.merge(tables.candidates[["candidate_id", "domain"]], on="candidate_id")
    scores = scores[scores["excluded_reason"].isna()]
    for domain, rows in scores.groupby("domain"):
        cut = np.quantile(rows["ppl"].to_numpy(), 0.60)
        allowed = set(rows.loc[rows["ppl"] <= cut, "candidate_id"])
        taken = set(selection.members.loc[selection.members["domain"] == domain, "candidate_id"])
        assert taken and taken <= allowed
        assert len(taken) == int(np.floor(0.5 * len(allowed) + 0.5))


@pytest.mark.parametrize("guard", [0, 100, -5])
def test_a_guard_outside_0_100_is_refused_where_the_selection_is_asked(guard):
    with pytest.raises(ValidationError, match="percentile between 0 and 100"):
        SelectionParams(budget="20%", ppl_guard=guard)


def test_a_guard_needs_cap_scores(store):
    con, _ = store
    with pytest.raises(CapselError, match="applies to cap and random"):
        build_selection(con, SelectionParams(budget="20%", method="random", ppl_guard=90), None)


def test_fits_made_by_the_residualize_step_are_used_as_fitted(store):
    """A flow fits each domain once (its residualize step) and hands the fits to the selection: given the fits of
    one domain only, the selection reports those and does not fit the other again; given all, it matches the
    selection that fitted them itself."""
    con, _ = store
    key = resolve_scoring_key(con)
    request = SelectionParams(budget="20%", ppl_guard=90)
    itself = build_selection(con, request, key)
    handed = build_selection(con, request, key, fit_domains(con, key))
    assert handed.fits == itself.fits and handed.members.equals(itself.members)
    [math_fit] = fit_domains(con, key, ["math"])
    assert [fit.domain for fit in build_selection(con, request, key, [math_fit]).fits] == ["math"]
