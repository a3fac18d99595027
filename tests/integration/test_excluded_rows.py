"""excluded.parquet and the funnel beside a published selection, against counts and ranks computed here."""

import hashlib

import numpy as np
import orjson
import pandas as pd
import pytest

from capsel.db import open_db
from capsel.publish.excluded import EXCLUDED_FILE
from capsel.publish.publish import publish_selection
from capsel.selection.params import SelectionParams
from capsel.selection.plan import build_selection
from capsel.selection.scoring_key import resolve_scoring_key
from tests.support.scored_pool import INGEST_RUN, make_pool

SIZES = {"code": 40, "math": 60, "science": 30}
N_EXCLUDED = 2


@pytest.fixture
def store(tmp_path):
    con = open_db(tmp_path / "capsel.duckdb")
    tables = make_pool(con, SIZES, n_excluded=N_EXCLUDED)
    # what ingest drops, and a candidate that came in after scoring
    dropped = [
        ("duplicates", {"source_id": "src0000000000001", "source_row": 101, "candidate_id": "math-00007",
                        "domain": "math", "ingest_run_id": INGEST_RUN}),
        ("duplicates", {"source_id": "src0000000000000", "source_row": 102, "candidate_id": "code-00003",
                        "domain": "code", "ingest_run_id": INGEST_RUN}),
        ("sampled_out", {"source_id": "src0000000000002", "source_row": 103, "candidate_id": "science-x",
                         "domain": "science", "ingest_run_id": INGEST_RUN}),
        ("quarantine", {"source_id": "src0000000000001", "source_row": 104, "domain": "math", "raw_text": "{",
                        "reason": "not_json", "detail": "unexpected end", "ingest_run_id": INGEST_RUN}),
        ("quarantine", {"source_id": "src0000000000001", "source_row": 105, "domain": None, "raw_text": "\x00",
                        "reason": "invalid_utf8", "detail": None, "ingest_run_id": INGEST_RUN}),
    ]
    for table, row in dropped:
        con.append(table, pd.DataFrame([row]), by_name=True)
    late = tables.candidates.iloc[[0]].assign(candidate_id="math-late", domain="math", dedup_key="math-late",
                                              source_id="src0000000000001", source_row=106)
    con.append("candidates", late, by_name=True)
    yield con, tables
    con.close()


def reference_z(divergences: pd.DataFrame, candidates: pd.DataFrame) -> pd.DataFrame:
    """CAP z per domain by numpy OLS over the eligible rows."""
    scored = divergences[divergences["excluded_reason"].isna()].merge(candidates[["candidate_id", "domain"]])
    frames = []
    for _, group in scored.groupby("domain"):
        d_early, d_late = group["d_early"].astype(float), group["d_late"].astype(float)
        beta, alpha = np.polyfit(d_early, d_late, 1)
        cap = d_late - (alpha + beta * d_early)
        frames.append(group.assign(z=(cap - cap.mean()) / cap.std(ddof=1)))
    return pd.concat(frames)


def test_every_pool_row_is_a_member_or_an_excluded_row_with_its_stage(store, tmp_path):
    con, tables = store
    guard = 90.0
    selection = build_selection(con, SelectionParams(budget="10%", ppl_guard=guard), resolve_scoring_key(con))
    published = publish_selection(con, selection, tmp_path / "out")
    excluded = pd.read_parquet(published.path / EXCLUDED_FILE)
    members = set(selection.members["candidate_id"])

    candidates = excluded.dropna(subset=["candidate_id"])
    pool = set(tables.candidates["candidate_id"]) | {"math-late"}
    kept_or_dropped = set(candidates[candidates["stage"] != "sampled_out"]["candidate_id"]) | members
    assert kept_or_dropped == pool and not members & set(candidates["candidate_id"])
    assert sorted(excluded[excluded["stage"] == "duplicate"]["duplicate_of"]) == ["code-00003", "math-00007"]
    assert sorted(excluded[excluded["stage"] == "quarantined"]["reason"]) == ["invalid_utf8", "not_json"]
    assert excluded[excluded["stage"] == "unscored"]["candidate_id"].tolist() == ["math-late"]
    assert excluded[excluded["stage"] == "sampled_out"]["candidate_id"].tolist() == ["science-x"]

    z = reference_z(tables.divergences, tables.candidates)
    # the guard: above the guard percentile of PPL in the domain (linear interpolation, as quantile_cont)
    cuts = z.groupby("domain")["ppl"].transform(lambda ppl: np.quantile(ppl, guard / 100))
    guarded = set(z[z["ppl"] > cuts]["candidate_id"])
    scorer_excluded = excluded[excluded["stage"] == "excluded"]
    assert set(scorer_excluded[scorer_excluded["reason"] == "ppl_guard"]["candidate_id"]) == guarded
    assert (scorer_excluded["reason"] == "short_response").sum() == N_EXCLUDED * len(SIZES)

    eligible = z[~z["candidate_id"].isin(guarded)].copy()
    eligible["rank"] = eligible.sort_values(["z", "candidate_id"], ascending=[False, True]).groupby("domain").cumcount() + 1
    below = excluded[excluded["stage"] == "below_cut"].merge(eligible, on="candidate_id", suffixes=("", "_ref"))
    assert len(below) == len(eligible) - len(members)
    assert (below["rank"] == below["rank_ref"]).all()
    np.testing.assert_allclose(below["z"], below["z_ref"], rtol=1e-9)
    k = selection.members.groupby("domain").size()
    assert (below["cut_rank"] == below["domain"].map(k)).all() and (below["rank"] > below["cut_rank"]).all()
    assert (below["z"] <= below["cut_z"]).all()

    funnel = {entry["stage"]: entry for entry in published.manifest["funnel"]}
    n_read = len(pool) + 2 + 1 + 2  # candidates, duplicates, sampled out, quarantined
    assert funnel["read"]["rows"] == n_read
    assert [funnel[s]["rows"] for s in ("duplicate", "sampled_out", "quarantined", "unscored")] == [2, 1, 2, 1]
    assert funnel["excluded"]["rows"] == N_EXCLUDED * len(SIZES) + len(guarded)
    assert funnel["excluded"]["reasons"] == {"short_response": N_EXCLUDED * len(SIZES), "ppl_guard": len(guarded)}
    assert funnel["eligible"]["rows"] == len(eligible) and funnel["selected"]["rows"] == len(members)
    dropped = sum(entry["rows"] for entry in published.manifest["funnel"]
                  if entry["stage"] not in ("read", "eligible", "selected"))
    assert dropped + len(members) == n_read == len(excluded) + len(members)
    manifest = orjson.loads((published.path / "manifest.json").read_bytes())
    assert EXCLUDED_FILE in manifest["files"] and manifest["funnel"] == published.manifest["funnel"]


def test_a_random_draw_of_one_domain_lists_that_domain_only_in_draw_order(store, tmp_path):
    con, tables = store
    request = SelectionParams(budget="5", method="random", domains=("math",), seed=7)
    selection = build_selection(con, request, resolve_scoring_key(con))
    excluded = pd.read_parquet(publish_selection(con, selection, tmp_path / "out").path / EXCLUDED_FILE)
    assert set(excluded["domain"]) == {"math"}  # the quarantined row without a domain is outside this pool
    assert sorted(excluded["stage"].unique()) == ["below_cut", "duplicate", "excluded", "quarantined", "unscored"]

    # the draw: md5(seed:candidate_id) over the eligible scored math candidates
    eligible = reference_z(tables.divergences, tables.candidates).query("domain == 'math'")["candidate_id"]
    order = sorted(eligible, key=lambda cid: (hashlib.md5(f"7:{cid}".encode()).hexdigest(), cid))
    assert selection.members["candidate_id"].tolist() == order[:5]
    not_drawn = excluded[excluded["stage"] == "below_cut"].sort_values("rank")
    assert not_drawn["candidate_id"].tolist() == order[5:]
    assert not_drawn["rank"].tolist() == list(range(6, len(order) + 1))
    assert set(not_drawn["reason"]) == {"not drawn"} and not_drawn["z"].notna().all()
