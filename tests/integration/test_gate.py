"""The great-expectations gate on real selections, intact and corrupted."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from capsel.db import open_db
from capsel.quality.expectations import GateSpec
from capsel.quality.gate import check_selection
from capsel.selection.budget import parse_budget
from capsel.selection.lineage import member_lineage
from capsel.selection.plan import SelectionRequest, build_selection
from capsel.selection.residualize import fit_stats
from capsel.selection.scoring_key import resolve_scoring_key
from tests.support.scored_pool import make_pool


@pytest.fixture
def store():
    con = open_db(":memory:")
    make_pool(con, {"code": 40, "math": 60}, n_excluded=3)
    key = resolve_scoring_key(con)
    selection = build_selection(con, SelectionRequest(parse_budget("8")), key)
    yield con, key, selection
    con.close()


def gate(con, key, selection, members, tmp_path):
    spec = GateSpec(quotas={q.domain: q.k for q in selection.quotas}, scored=True)
    return check_selection(con, members, spec, key, selection.domain_stats, tmp_path / "gate")


def test_intact_selection_passes_and_leaves_a_report(store, tmp_path):
    con, key, selection = store
    result = gate(con, key, selection, selection.members, tmp_path)
    assert result.success, result.failures
    assert result.n_expectations > 30
    assert result.report_index == tmp_path / "gate" / "index.html"
    assert "capsel_members" in result.report_index.read_text()


def test_corrupted_selection_fails_naming_each_broken_expectation(store, tmp_path):
    con, key, selection = store
    members = selection.members.copy()
    # 1. an id selected twice; 2. a NaN z; 3. an empty response; 4. a candidate the engine excluded
    duplicate = members.iloc[[0]]
    members.loc[members.index[1], "z"] = float("nan")
    members.loc[members.index[2], "response"] = "   "
    excluded_id = "math-00000"
    excluded = member_lineage(con, [excluded_id], key).assign(
        domain="math", rank=99, d_early=0.1, d_late=0.1, cap=0.0, z=0.0
    )
    # 5. a member whose source row sits in quarantine
    quarantined = members.iloc[3]
    con.append("quarantine", pd.DataFrame([{
        "source_id": quarantined["source_id"], "source_row": int(quarantined["source_row"]),
        "reason": "not_json", "ingest_run_id": "x",
    }]), by_name=True)
    corrupted = pd.concat([members, duplicate, excluded], ignore_index=True)
    result = gate(con, key, selection, corrupted, tmp_path)
    text = "\n".join(result.failures)
    assert not result.success
    for expected in (
        "expect_column_values_to_be_unique(column='candidate_id')",
        "expect_column_values_to_not_be_null(column='z')",
        "expect_column_values_to_not_match_regex(column='response'",
        "expect_column_values_to_be_null(column='excluded_reason')",
        "expect_column_values_to_be_in_set(column='is_quarantined'",
        "expect_table_row_count_to_equal(value=16)",
        "expect_column_pair_values_to_be_equal(column_A='n_members', column_B='k')",
    ):
        assert expected in text
    assert excluded_id in text
    assert (tmp_path / "gate" / "index.html").exists()


def test_untraceable_member_and_unstandardised_z_fail(store, tmp_path):
    con, key, selection = store
    members = selection.members.astype({"source_id": object})
    members.loc[members.index[0], "candidate_id"] = "no-such-candidate"
    members.loc[members.index[1], "source_id"] = 12345  # not text: the schema check must notice
    skewed = {domain: {**stats, "z_mean": stats["z_mean"] + 0.1, "z_std": stats["z_std"] * 1.5}
              for domain, stats in selection.domain_stats.items()}
    spec = GateSpec(quotas={q.domain: q.k for q in selection.quotas}, scored=True)
    result = check_selection(con, members, spec, key, skewed, tmp_path / "g")
    text = "\n".join(result.failures)
    assert "expect_column_values_to_be_in_set(column='has_candidate'" in text
    assert "expect_column_values_to_be_in_set(column='has_source'" in text
    assert "expect_column_values_to_be_in_type_list(column='source_id'" in text
    assert "expect_column_values_to_be_between(column='z_mean'" in text
    assert "expect_column_values_to_be_between(column='z_std'" in text


def test_a_fit_that_is_not_the_ols_line_or_stands_on_no_spread_fails(store, tmp_path):
    con, key, selection = store
    fits = {fit.domain: fit for fit in selection.fits}
    # each stat as DomainFit computes it from forged values: the gate checks what the fit says, not the code path
    forged = {
        "code": fit_stats(replace(fits["code"], alpha=-1.8e12)),  # alpha far off mean(d_late) - beta·mean(d_early)
        "math": fit_stats(replace(fits["math"], beta=float("inf"), var_early=fits["math"].early_mean ** 2 * 1e-26)),
    }
    spec = GateSpec(quotas={q.domain: q.k for q in selection.quotas}, scored=True)
    result = check_selection(con, selection.members, spec, key, forged, tmp_path / "g")
    assert not result.success
    failing = {line.split("(column='")[1].split("'")[0]: line for line in result.failures}
    assert set(failing) == {"alpha_share", "beta", "beta_share", "early_relative_spread"}, result.failures
    assert '"domain":"code"' in failing["alpha_share"] and '"domain":"math"' not in failing["alpha_share"]
    for column in ("beta", "beta_share", "early_relative_spread"):
        assert '"domain":"math"' in failing[column] and '"domain":"code"' not in failing[column]
    untouched = check_selection(con, selection.members, spec, key, selection.domain_stats, tmp_path / "ok")
    assert untouched.success, untouched.failures


def test_the_stats_of_a_real_fit_match_numpy(store):
    con, key, selection = store
    scores = con.execute("select domain, d_early, d_late from cap_scores where model_fingerprint = ? "
                         "and config_hash = ?", [key.model_fingerprint, key.config_hash]).df()
    for fit in selection.fits:
        pool = scores[scores["domain"] == fit.domain]
        x, y = pool["d_early"].to_numpy(), pool["d_late"].to_numpy()
        beta, alpha = np.polyfit(x, y, 1)
        assert (fit.alpha, fit.beta) == (pytest.approx(alpha, rel=1e-9), pytest.approx(beta, rel=1e-9))
        assert fit.early_relative_spread == pytest.approx(x.std(ddof=1) / abs(x.mean()), rel=1e-9)
        assert fit.beta_share == pytest.approx(abs(np.corrcoef(x, y)[0, 1]), rel=1e-9)
        assert fit.alpha_share == pytest.approx(abs(alpha) / (abs(y.mean()) + abs(beta) * abs(x.mean())), rel=1e-9)
