"""Publishing to disk: the files, the manifest, the DB rows, and what a failure leaves behind."""

from datetime import datetime, timezone

import duckdb
import numpy as np
import orjson
import pandas as pd
import pyarrow.parquet as pq
import pytest

from capsel.db import open_db
from capsel.publish.publish import publish_selection
from capsel.publish.selection_id import members_digest, new_selection_id
from capsel.selection.params import SelectionParams
from capsel.selection.plan import build_selection
from capsel.selection.scoring_key import resolve_scoring_key
from capsel.versioning import file_sha256
from tests.support.gate_refusal import refused
from tests.support.scored_pool import make_pool


@pytest.fixture
def store(tmp_path):
    con = open_db(tmp_path / "capsel.duckdb")
    tables = make_pool(con, {"code": 40, "math": 60, "science": 30}, n_excluded=2)
    key = resolve_scoring_key(con)
    selection = build_selection(con, SelectionParams(budget="10%"), key)
    yield con, tables, selection, tmp_path / "out"
    con.close()


def visible(out_dir):
    """Entries a user or trainer would take for selections."""
    return sorted(p.name for p in out_dir.iterdir() if p.name.startswith("sel-")) if out_dir.exists() else []


def leftovers(out_dir):
    return sorted(p.name for p in out_dir.iterdir() if p.name.startswith(".tmp-")) if out_dir.exists() else []


def n_rows(con, table):
    return con.table(table).count("*").fetchall()[0][0]


def test_published_files_load_and_match_the_selection(store):
    con, tables, selection, out_dir = store
    published = publish_selection(con, selection, out_dir, run_id="run-1")
    root = published.path
    assert visible(out_dir) == [published.selection_id] and leftovers(out_dir) == []
    members = selection.members

    frame = pd.read_parquet(root / "data.parquet")
    table = pq.read_table(root / "data.parquet")
    assert table.num_rows == len(members) == 4 + 6 + 3
    assert frame["candidate_id"].tolist() == members["candidate_id"].tolist()
    assert frame["output"].tolist() == members["response"].tolist()
    np.testing.assert_array_equal(frame["z"], members["z"])

    lines = (root / "data.jsonl").read_bytes().splitlines()
    records = [orjson.loads(line) for line in lines]
    assert all(list(record) == ["instruction", "input", "output"] for record in records)
    texts = tables.candidates.set_index("candidate_id").loc[members["candidate_id"]]
    assert [r["instruction"] for r in records] == texts["instruction"].tolist()
    assert [r["input"] for r in records] == texts["input"].tolist()
    assert [r["output"] for r in records] == texts["response"].tolist()
    assert pd.read_json(root / "data.jsonl", lines=True).shape == (len(members), 3)

    info = orjson.loads((root / "dataset_info.json").read_bytes())
    assert info == {published.selection_id: {
        "file_name": "data.jsonl", "columns": {"prompt": "instruction", "query": "input", "response": "output"},
    }}

    manifest = orjson.loads((root / "manifest.json").read_bytes())
    assert manifest == published.manifest
    assert manifest["selection_id"] == published.selection_id and manifest["run_id"] == "run-1"
    assert manifest["model"]["fingerprint"] == selection.key.model_fingerprint
    assert manifest["scoring_config"]["config"] == {"prompt_tokens": 256, "horizon": 48}
    fits = {fit.domain: fit for fit in selection.fits}
    for entry in manifest["domains"]:
        assert entry["alpha"] == fits[entry["domain"]].alpha and entry["beta"] == fits[entry["domain"]].beta
        assert entry["n_members"] == entry["k"] and entry["n_eligible"] == entry["n_candidates"] - 2
    sources = tables.sources.set_index("source_id")
    assert {s["source_id"]: s["sha256"] for s in manifest["sources"]} == sources["sha256"].to_dict()
    for name, digest in manifest["files"].items():
        assert file_sha256(root / name) == digest
    assert manifest["code_version"] and manifest["created_at"].endswith("+00:00")

    card = (root / "README.md").read_text()
    assert published.selection_id in card and "| math | 60 | 2 | 58 | 6 | 6 |" in card
    # sources and the model by their own names: the publisher's directories (/data/, /models/) stay in the manifest
    assert "/data/" not in card and "/models/" not in card and "src0000000000000.jsonl" in card
    assert f"model: {selection.key.model_fingerprint}, fingerprint `{selection.key.model_fingerprint}`" in card
    assert f"| selected | {len(members)} | {len(members)} |" in card and manifest["license"] == "other"
    for domain in ("code", "math", "science"):
        pngs = sorted((root / "report").glob(f"{domain}-*.png"))
        assert len(pngs) == 2 and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
        assert all(p.name in (root / "report" / "index.html").read_text() for p in pngs)
    assert manifest["gate"] == {"success": True, "n_expectations": manifest["gate"]["n_expectations"],
                                "report": "gate/index.html", "validation": "gate/validation.json"}
    # the gate folder holds the report alone: no GX static assets (4.2 MB per selection before)
    assert sorted(p.name for p in (root / "gate").rglob("*")) == ["index.html", "validation.json"]
    validation = orjson.loads((root / "gate" / "validation.json").read_bytes())
    assert validation["run_name"] == published.selection_id and validation["success"] is True
    assert manifest["gate"]["n_expectations"] == sum(len(t["results"]) for t in validation["tables"].values())
    assert published.selection_id in (root / "gate" / "index.html").read_text()

    row = con.table("selections").df().iloc[0]
    assert (row["selection_id"], row["n_members"], row["out_dir"]) == (published.selection_id, 13, str(root))
    stored = con.table("selection_members").df().sort_values(["domain", "rank"])
    assert stored["candidate_id"].tolist() == members["candidate_id"].tolist()
    np.testing.assert_array_equal(stored["score"], members["cap"])


def test_gate_failure_publishes_nothing_and_keeps_the_report(store):
    con, _, selection, out_dir = store
    members = pd.concat([selection.members, selection.members.iloc[[0]]], ignore_index=True)
    members.loc[3, "z"] = float("nan")
    failure = refused(con, selection, members, out_dir, "expect_column_values_to_be_unique(column='candidate_id')",
                      "expect_column_values_to_not_be_null(column='z')")
    assert visible(out_dir) == [] and leftovers(out_dir) == []
    kept = failure.kept_at
    assert kept.parent == out_dir / "rejected"
    assert sorted(p.name for p in (kept / "gate").rglob("*")) == ["index.html", "validation.json"]
    validation = orjson.loads((kept / "gate" / "validation.json").read_bytes())
    assert validation["run_name"] == kept.name and validation["success"] is False
    assert kept.name in (kept / "gate" / "index.html").read_text()
    assert orjson.loads((kept / "failures.json").read_bytes()) == failure.gate.failures
    assert n_rows(con, "selections") == 0 and n_rows(con, "selection_members") == 0


class Crash(Exception):
    """Stands in for a process dying while it writes."""


@pytest.mark.parametrize("crash_after", ["data.jsonl", "index.html", "manifest.json"])
def test_publish_interrupted_midway_leaves_no_visible_selection(store, crash_after):
    con, _, selection, out_dir = store
    written = []

    def hook(path):
        written.append(path.name)
        if path.name == crash_after:
            raise Crash(path)

    with pytest.raises(Crash):
        publish_selection(con, selection, out_dir, on_file_written=hook)
    assert crash_after in written
    assert visible(out_dir) == [] and leftovers(out_dir) == []
    assert n_rows(con, "selections") == 0 and n_rows(con, "selection_members") == 0
    if crash_after == "manifest.json":
        # the store is still usable and the same selection publishes cleanly afterwards
        assert publish_selection(con, selection, out_dir).path.is_dir()


def test_db_failure_takes_the_directory_back(store):
    con, _, selection, out_dir = store
    created = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    selection_id = new_selection_id(members_digest(selection.members), created)
    # a row already holding the id makes the insert fail inside the publishing transaction
    con.append("selections", pd.DataFrame([{
        "selection_id": selection_id, "method": "cap", "budget": "1", "budget_mode": "per_domain",
        "out_dir": "elsewhere", "n_members": 0,
    }]), by_name=True)
    with pytest.raises(duckdb.ConstraintException):
        publish_selection(con, selection, out_dir, created_at=created)
    assert visible(out_dir) == [] and leftovers(out_dir) == []
    assert n_rows(con, "selections") == 1 and n_rows(con, "selection_members") == 0


def test_random_control_without_scores_publishes_from_all_candidates(tmp_path):
    scratch = open_db(":memory:")
    tables = make_pool(scratch, {"code": 30, "math": 20})
    con = open_db(tmp_path / "bare.duckdb")
    con.append("sources", tables.sources, by_name=True)
    con.append("candidates", tables.candidates, by_name=True)
    request = SelectionParams(budget="5", method="random", seed=4)
    selection = build_selection(con, request, resolve_scoring_key(con, required=False))
    published = publish_selection(con, selection, tmp_path / "out")
    manifest = published.manifest
    assert manifest["pool"].startswith("all candidates") and manifest["model"]["fingerprint"] is None
    assert manifest["n_members"] == 10 and manifest["seed"] == 4
    assert pd.read_parquet(published.path / "data.parquet")["z"].isna().all()
    # nothing to plot without scores: the report is the summary table alone
    assert [p.name for p in (published.path / "report").iterdir()] == ["index.html"]
    con.close()


def test_names_from_the_data_never_leave_the_selection_folder(tmp_path):
    # domains and candidate ids are user data; the report turns domains into file names
    escapes = ["../../escape", str(tmp_path / "absolute"), "a/b\\c"]
    con = open_db(tmp_path / "capsel.duckdb")
    make_pool(con, {name: 30 for name in escapes})
    selection = build_selection(con, SelectionParams(budget="10%"), resolve_scoring_key(con))
    out_dir = tmp_path / "deep" / "out"
    published = publish_selection(con, selection, out_dir)
    con.close()

    written = [path for path in tmp_path.rglob("*") if path.is_file() and not path.name.startswith("capsel.duckdb")]
    assert written and all(published.path in path.parents for path in written)
    assert len(list((published.path / "report").glob("*.png"))) == 2 * len(escapes)
    assert [entry.name for entry in out_dir.iterdir()] == [published.selection_id]
