"""The great-expectations gate on real selections, intact and corrupted."""

import pandas as pd
import pytest

from capsel.db import open_db
from capsel.quality.expectations import GateSpec
from capsel.quality.gate import check_selection
from capsel.selection.budget import parse_budget
from capsel.selection.lineage import member_lineage
from capsel.selection.plan import SelectionRequest, build_selection
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
    return check_selection(con, members, spec, key, selection.z_stats, tmp_path / "gate")


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
    skewed = {domain: (mean + 0.1, std * 1.5) for domain, (mean, std) in selection.z_stats.items()}
    spec = GateSpec(quotas={q.domain: q.k for q in selection.quotas}, scored=True)
    result = check_selection(con, members, spec, key, skewed, tmp_path / "g")
    text = "\n".join(result.failures)
    assert "expect_column_values_to_be_in_set(column='has_candidate'" in text
    assert "expect_column_values_to_be_in_set(column='has_source'" in text
    assert "expect_column_values_to_be_in_type_list(column='source_id'" in text
    assert "expect_column_values_to_be_between(column='z_mean'" in text
    assert "expect_column_values_to_be_between(column='z_std'" in text
