"""`--json`: every reporting command prints exactly one JSON object on stdout, whose numbers match the store."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

from capsel.db import open_db
from tests.fixtures.candidates import mixed_candidates
from tests.fixtures.pool import append_candidates, tiny_model_dir
from tests.support.capsel_cli import query, run_capsel
from tests.support.scored_pool import make_pool

pytestmark = pytest.mark.e2e


def capsel_json(tmp_path, *args) -> dict:
    done = run_capsel(tmp_path, *args, "--json", timeout=300)
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)  # fails on a table, a progress line or a second object
    assert payload["ok"] is True
    return payload


def test_score_json_counts_match_the_stored_results(tmp_path):
    model = tiny_model_dir(tmp_path / "model")
    con = open_db(tmp_path / "capsel.duckdb")
    append_candidates(con, mixed_candidates())
    con.close()
    scored = capsel_json(tmp_path, "score", "--model", str(model), "--batch-size", "4", "--device", "cpu",
                         "--threads", "1")
    run = scored["scoring"]
    stored = dict(query(tmp_path, "select coalesce(excluded_reason, 'scored'), count(*) from divergences group by 1"))
    assert run["n_done"] == stored.pop("scored")
    assert run["n_excluded"] == stored
    assert run["n_processed"] == run["n_done"] + sum(run["n_excluded"].values()) == len(mixed_candidates())
    assert run["torch_threads"] == 1 and run["run_id"]
    assert [(scored["model_fingerprint"], scored["config_hash"])] == query(
        tmp_path, "select distinct model_fingerprint, config_hash from divergences")


def test_select_selections_export_and_compare_json(tmp_path):
    con = open_db(tmp_path / "capsel.duckdb")
    make_pool(con, {"code": 30, "math": 50}, n_excluded=2)
    con.close()

    selected = capsel_json(tmp_path, "select", "--budget", "10", "--out", "sels")
    members = query(tmp_path, "select domain, count(*) from selection_members group by 1 order by 1")
    assert members == [("code", 10), ("math", 10)] and selected["n_members"] == 20
    assert os.path.isdir(selected["path"]) and selected["manifest"]["n_members"] == 20
    assert [d["k"] for d in selected["manifest"]["domains"]] == [10, 10]

    traced = capsel_json(tmp_path, "lineage", selected["selection_id"])
    assert traced["selection"]["selection_id"] == selected["selection_id"] and traced["selection"]["n_members"] == 20
    # the funnel: 80 candidates, 4 of them excluded by the scorer, 76 eligible, 56 below the cut of 10 per domain
    assert traced["funnel"] == selected["manifest"]["funnel"]
    assert [(e["stage"], e["rows"], e["left"]) for e in traced["funnel"]] == [
        ("read", 80, 80), ("duplicate", 0, 80), ("sampled_out", 0, 80), ("quarantined", 0, 80), ("unscored", 0, 80),
        ("excluded", 4, 76), ("eligible", 76, 76), ("below_cut", 56, 20), ("selected", 20, 20)]

    listed = capsel_json(tmp_path, "selections")
    assert [(s["selection_id"], s["n_members"], s["present"]) for s in listed["selections"]] == [
        (selected["selection_id"], 20, True)]

    exported = capsel_json(tmp_path, "export-scores", "--out", "scores.parquet")
    frame = pd.read_parquet(exported["path"])
    assert exported["n_rows"] == len(frame) == 80  # every candidate, excluded ones with their reason
    assert frame["excluded_reason"].notna().sum() == 4

    compared = capsel_json(tmp_path, "compare", "--budget", "5", "--out", "cmp")
    assert {"cap", "random"} <= set(compared["methods"])
    assert compared["report"].endswith("index.html") and os.path.isfile(compared["report"])
    medians = pd.DataFrame(compared["medians"])
    assert set(medians["domain"]) == {"code", "math"} and set(medians["n_members"]) == {5}

    status = capsel_json(tmp_path, "status")
    assert {row["domain"]: row["n_candidates"] for row in status["domains"]} == {"code": 30, "math": 50}
    assert {row["domain"]: row["n_selections"] for row in status["domains"]} == {"code": 1, "math": 1}
    # the newest selection's funnel, the same as `capsel lineage` shows
    assert status["latest_selection"] == {"selection_id": selected["selection_id"], "funnel": traced["funnel"]}
