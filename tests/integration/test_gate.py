"""The great-expectations gate on real selections, intact and corrupted, and its report read offline."""

from dataclasses import replace
from html.parser import HTMLParser

import numpy as np
import orjson
import pandas as pd
import pytest
from PIL import Image

from capsel.db import open_db
from capsel.publish.manifest import domain_entries
from capsel.quality.expectations import GateSpec
from capsel.quality.gate import check_selection
from capsel.selection.lineage import member_lineage
from capsel.selection.params import SelectionParams
from capsel.selection.plan import build_selection
from capsel.selection.residualize import fit_stats
from capsel.selection.scoring_key import resolve_scoring_key
from tests.support.chromium import render_offline, screenshot_offline
from tests.support.scored_pool import make_pool

RUN_NAME = "sel-20261125T000000Z-0123abcd"


@pytest.fixture
def store():
    con = open_db(":memory:")
    make_pool(con, {"code": 40, "math": 60}, n_excluded=3)
    key = resolve_scoring_key(con)
    selection = build_selection(con, SelectionParams(budget="8"), key)
    yield con, key, selection
    con.close()


def gate(con, key, selection, members, tmp_path):
    spec = GateSpec(quotas={q.domain: q.k for q in selection.quotas}, scored=True)
    return check_selection(con, members, spec, key, selection.domain_stats, tmp_path / "gate", RUN_NAME)


class Rows(HTMLParser):
    """The rendered report's expectation rows: (table, class, cells) per body row."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.rows: list[tuple[str, str, list[str]]] = []
        self._table, self._in_body, self._cell = "", False, None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "h2":
            self._table = attrs["id"].removeprefix("table-")
        self._in_body = self._in_body or tag == "tbody"
        if tag == "tr" and self._in_body:
            self.rows.append((self._table, attrs["class"], []))
        elif tag == "td":
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "td":
            self.rows[-1][2].append("".join(self._cell))
            self._cell = None
        self._in_body = self._in_body and tag != "tbody"

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def test_intact_selection_passes_and_leaves_a_report_named_after_it(store, tmp_path):
    con, key, selection = store
    result = gate(con, key, selection, selection.members, tmp_path)
    assert result.success, result.failures
    assert result.n_expectations > 30
    assert result.report_index == tmp_path / "gate" / "index.html"
    assert result.validation == tmp_path / "gate" / "validation.json"
    # the report and nothing else: no GX site, no static assets
    assert sorted(p.name for p in (tmp_path / "gate").rglob("*")) == ["index.html", "validation.json"]
    validation = orjson.loads(result.validation.read_bytes())
    assert validation["run_name"] == RUN_NAME and validation["success"] is True
    assert set(validation["tables"]) == {"members", "domains"}
    for table in validation["tables"].values():
        assert table["meta"]["run_id"]["run_name"] == RUN_NAME
    assert sum(len(table["results"]) for table in validation["tables"].values()) == result.n_expectations
    page = result.report_index.read_text()
    assert "__none__" not in page and "__none__" not in result.validation.read_text()
    assert f"Data-quality gate: {RUN_NAME}" in page


@pytest.mark.browser
def test_the_report_renders_offline_with_every_result_visible(store, tmp_path):
    con, key, selection = store
    members = pd.concat([selection.members, selection.members.iloc[[0]]], ignore_index=True)
    members.loc[1, "z"] = float("nan")
    result = gate(con, key, selection, members, tmp_path)
    assert not result.success

    render = render_offline(result.report_index)
    assert render.requested == []
    validation = orjson.loads(result.validation.read_bytes())
    expected = [
        (table, "passed" if outcome["success"] else "failed", outcome["expectation_config"]["type"],
         "pass" if outcome["success"] else "FAIL")
        for table, suite in validation["tables"].items() for outcome in suite["results"]
    ]
    rows = Rows(render.dom).rows
    assert [(table, kind, cells[1], cells[3]) for table, kind, cells in rows] == expected
    assert len(rows) == result.n_expectations
    failed = {cells[1] + "(" + cells[2] + ")": cells[4] for _, kind, cells in rows if kind == "failed"}
    assert failed["expect_column_values_to_not_be_null(column='z')"].startswith("1 unexpected")
    assert members.loc[1, "candidate_id"] in failed["expect_column_values_to_not_be_null(column='z')"]
    assert failed[f"expect_table_row_count_to_equal(value={len(selection.members)})"] == f"observed {len(members)}"
    assert "id=\"verdict\">failed<" in render.dom and RUN_NAME in render.dom

    # drawn offline, the inline styles hold: failing rows are tinted, the verdict is a red badge
    shot = tmp_path / "gate.png"
    screenshot_offline(result.report_index, shot)
    colours = {colour for _, colour in Image.open(shot).convert("RGB").getcolors(maxcolors=1 << 20)}
    assert {(0xFF, 0xEB, 0xE9), (0xCF, 0x22, 0x2E)} <= colours


@pytest.mark.browser
def test_the_offline_render_lists_what_a_page_asks_the_network_for(tmp_path):
    page = tmp_path / "cdn.html"
    page.write_text("<!doctype html><link rel='stylesheet' href='https://cdn.jsdelivr.net/npm/x.css'>"
                    "<p>text</p><img src='http://example.com/x.png'>")
    render = render_offline(page)
    assert sorted(render.requested) == ["http://example.com/x.png", "https://cdn.jsdelivr.net/npm/x.css"]
    assert "<p>text</p>" in render.dom


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
    result = check_selection(con, members, spec, key, skewed, tmp_path / "g", RUN_NAME)
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
    result = check_selection(con, selection.members, spec, key, forged, tmp_path / "g", RUN_NAME)
    assert not result.success
    failing = {line.split("(column='")[1].split("'")[0]: line for line in result.failures}
    assert set(failing) == {"alpha_share", "beta", "beta_share", "early_relative_spread"}, result.failures
    assert '"domain":"code"' in failing["alpha_share"] and '"domain":"math"' not in failing["alpha_share"]
    for column in ("beta", "beta_share", "early_relative_spread"):
        assert '"domain":"math"' in failing[column] and '"domain":"code"' not in failing[column]
    untouched = check_selection(con, selection.members, spec, key, selection.domain_stats, tmp_path / "ok", RUN_NAME)
    assert untouched.success, untouched.failures


def test_per_domain_counts_to_be_published_must_be_the_members_counted(store, tmp_path):
    con, key, selection = store
    spec = GateSpec(quotas={q.domain: q.k for q in selection.quotas}, scored=True)
    # what a manifest that counted non-null z said of a random selection: no member in any domain
    stated = {domain["domain"]: domain["n_members"] for domain in domain_entries(selection)}
    assert stated == selection.members.groupby("domain").size().to_dict()
    assert check_selection(con, selection.members, spec, key, selection.domain_stats, tmp_path / "ok", RUN_NAME,
                           published_counts=stated).success
    wrong = check_selection(con, selection.members, spec, key, selection.domain_stats, tmp_path / "g", RUN_NAME,
                            published_counts={domain: 0 for domain in stated})
    assert not wrong.success
    [failure] = wrong.failures
    assert "expect_column_pair_values_to_be_equal(column_A='n_published', column_B='n_members')" in failure


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
