"""Flows against a real Prefect server: incremental rescoring, lineage back to source lines, OpenLineage events."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import uuid
from pathlib import Path

import orjson
import pandas as pd
import pytest
from rich.console import Console

from capsel.db import open_db
from capsel.lineage import trace
from capsel.lineage.render import lineage_tree
from capsel.profile.check import check_model
from tests.e2e.conftest import run_roots
from tests.support.flow_pool import flow_config, tiny_flow_model, write_pool_file
from tests.support.openlineage_schema import validate_event

pytestmark = pytest.mark.e2e


def _members(selection_dir) -> pd.DataFrame:
    return pd.read_parquet(selection_dir / "data.parquet")


def _rendered(lineage) -> str:
    console = Console(record=True, width=400)
    console.print(lineage_tree(lineage))
    return console.export_text()


def _rows(con, query: str) -> list[tuple]:
    return con.execute(query).fetchall()


@pytest.fixture(scope="module")
def incremental(tmp_path_factory, prefect_server):
    """First file selected; a second file arrives and is rescored; a rescore with nothing new; a from-scratch run."""
    from prefect.settings import PREFECT_API_URL, PREFECT_LOGGING_TO_API_ENABLED, temporary_settings

    from capsel.flows.rescore_flow import rescore_flow
    from capsel.flows.select_flow import select_flow

    root = tmp_path_factory.mktemp("incremental")
    model = tiny_flow_model(root / "model")
    incoming = root / "incoming"
    first = write_pool_file(incoming / "a.jsonl", 12, seed=1)
    settings = {PREFECT_API_URL: prefect_server.api_url, PREFECT_LOGGING_TO_API_ENABLED: False}
    with temporary_settings(updates=settings), pytest.MonkeyPatch.context() as patch:
        for key, value in run_roots(prefect_server.allowed_root).items():  # the deployment these runs belong to
            patch.setenv(key, value)
        v1 = select_flow(**flow_config(root / "live", model, [str(incoming)]).parameters())
        second = write_pool_file(incoming / "b.jsonl", 8, seed=2)
        # two rows of the second file repeat the first file's instructions: dedup against the pool
        lines = second.read_text().splitlines()
        repeated = [json.loads(line) for line in first.read_text().splitlines()[:2]]
        second.write_text("\n".join(lines + [json.dumps(dict(row, response="late copy")) for row in repeated]) + "\n")
        v2 = rescore_flow(**flow_config(root / "live", model, [str(incoming)]).parameters())
        v3 = rescore_flow(**flow_config(root / "live", model, [str(incoming)]).parameters())
        scratch = select_flow(**flow_config(root / "scratch", model, [str(first), str(second)],
                                            selection={"license": "cc-by-4.0"}).parameters())
        # the same scored pool, D_late read over the last block only: no rescore, a selection of its own
        split = select_flow(**flow_config(root / "scratch", model, [str(first), str(second)],
                                          selection={"late": "last:1", "out": "split"}).parameters())
    return {"root": root, "model": model, "files": (first, second), "v1": v1, "v2": v2, "v3": v3,
            "scratch": scratch, "split": split}


def test_the_flow_warns_exactly_when_the_model_lacks_the_u_shape(incremental):
    _, verdict = check_model(incremental["model"])
    warnings = [note for note in incremental["v1"].get("notes", []) if "no U-shape" in note]
    assert len(warnings) == (0 if verdict.present else 1)
    if warnings:
        assert verdict.reason in warnings[0]


def test_a_model_is_surveyed_once_per_database(incremental):
    _, verdict = check_model(incremental["model"])
    con = open_db(incremental["root"] / "live" / "capsel.duckdb", read_only=True)
    try:
        kept = _rows(con, "select present, verdict from rank_profiles")
    finally:
        con.close()
    # v1 surveyed and kept the verdict; the rescores of the same model files read it
    assert len(kept) == 1 and kept[0][0] == verdict.present
    assert orjson.loads(kept[0][1])["reason"] == verdict.reason
    assert not any(note.startswith("rank profile: the verdict of") for note in incremental["v1"].get("notes", []))
    for run in ("v2", "v3"):
        assert any(note.startswith("rank profile: the verdict of") for note in incremental[run]["notes"]), run
    # another database surveys for itself
    assert not any("the verdict of" in note for note in incremental["scratch"].get("notes", []))


def test_a_model_that_cannot_load_fails_the_flow_before_ingest(prefect_server, tmp_path):
    source = write_pool_file(tmp_path / "in" / "pool.jsonl", 6, seed=3)
    broken = tmp_path / "broken-model"
    broken.mkdir()
    tiny = tiny_flow_model(tmp_path / "tiny")
    (broken / "model.safetensors").write_bytes((tiny / "model.safetensors").read_bytes())
    (broken / "config.json").write_text('{"model_type": "llama", "hidden_size": ')  # cut off mid-write
    db = tmp_path / "capsel.duckdb"
    done = subprocess.run(
        [sys.executable, "-m", "capsel", "flow", "select", "--input", str(source), "--model", str(broken),
         "--db", str(db)], env=prefect_server.env(CAPSEL_OUTPUT_ROOT=str(tmp_path / "out")), cwd=tmp_path,
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and str(broken) in errors[0], done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "check-rank-profile" not in done.stderr + done.stdout
    con = open_db(db, read_only=True)
    try:  # nothing was ingested, and the run is recorded as failed
        assert _rows(con, "select count(*) from sources") == [(0,)]
        assert _rows(con, "select kind, status from runs") == [("flow", "failed")]
    finally:
        con.close()


def test_a_flow_whose_ingest_keeps_nothing_stops_there_as_capsel_ingest_does(prefect_server, tmp_path):
    """Rows under other field names: the flow fails at ingest with the CLI's exit code and words (the field hint
    included), runs no survey or scoring, and the hinted options rerun it to a published selection."""
    pool = write_pool_file(tmp_path / "pool.jsonl", 10, seed=5, domains=("code",)).read_text().splitlines()[:10]
    rows = [{"question": row["instruction"], "answer": row["response"], "domain": row["domain"]}
            for row in map(json.loads, pool)]
    source = tmp_path / "in" / "qa.jsonl"
    source.parent.mkdir()
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    model = tiny_flow_model(tmp_path / "tiny")
    env = prefect_server.env(CAPSEL_OUTPUT_ROOT=str(tmp_path / "out"))
    flow = [sys.executable, "-m", "capsel", "flow", "select", "--input", str(source), "--model", str(model),
            "--db", str(tmp_path / "flow.duckdb"), "--budget", "2"]
    failed = subprocess.run(flow, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    cli = subprocess.run([sys.executable, "-m", "capsel", "ingest", str(source), "--db", str(tmp_path / "cli.duckdb")],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert failed.returncode == cli.returncode == 3, failed.stderr[-3000:]
    # the error as one line (the terminal wraps it), from its `error:` on
    flow_error, cli_error = (" ".join(done.stderr[done.stderr.index("error:"):].split()) for done in (failed, cli))
    assert flow_error == cli_error
    assert "--map instruction=question,response=answer with --reingest" in flow_error
    assert "Traceback" not in failed.stderr and "check-rank-profile" not in failed.stderr + failed.stdout
    con = open_db(tmp_path / "flow.duckdb", read_only=True)
    try:
        assert _rows(con, "select count(*) from quarantine") == [(10,)]
        assert _rows(con, "select kind, status from runs order by started_at") == [("flow", "failed"),
                                                                                    ("ingest", "completed")]
    finally:
        con.close()

    fixed = subprocess.run([*flow, "--map", "instruction=question,response=answer", "--reingest", "--batch-size",
                            "auto"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert fixed.returncode == 0, fixed.stderr[-3000:]
    con = open_db(tmp_path / "flow.duckdb", read_only=True)
    try:
        assert _rows(con, "select count(*) from candidates") == [(10,)]
        assert _rows(con, "select count(*) from selection_members") == [(2,)]
    finally:
        con.close()


def test_rescore_scores_only_the_new_candidates(incremental):
    v1, v2 = incremental["v1"], incremental["v2"]
    new = sum(d["n_inserted"] for d in v2["ingest"]["domains"].values())
    assert new == 16 and v2["ingest"]["files_skipped"] == 1 and v2["ingest"]["files_ingested"] == 1
    # the file repeats its own first row once and two rows of the first file
    assert sum(d["n_duplicates"] for d in v2["ingest"]["domains"].values()) == 3
    assert v2["score"]["n_already_done"] == v1["score"]["n_processed"] == 24
    assert v2["score"]["n_processed"] == v2["score"]["n_generated"] == new
    con = open_db(incremental["root"] / "live" / "capsel.duckdb", read_only=True)
    try:
        # each candidate generated and scored exactly once, by the run that found it pending
        assert _rows(con, "select count(*), count(distinct candidate_id) from generations") == [(40, 40)]
        per_run = dict(_rows(con, "select parent.run_id, count(*) from divergences join runs as shard "
                                  "on shard.run_id = divergences.run_id join runs as parent "
                                  "on parent.run_id = shard.parent_run_id group by all"))
        assert per_run == {v1["score"]["run_id"]: 24, v2["score"]["run_id"]: 16}
        # the ingest, score and select runs of a flow run are recorded under it, with its Prefect id
        stages = _rows(con, "select child.kind, parent.kind, child.prefect_flow_run_id = parent.prefect_flow_run_id "
                            "from runs as child left join runs as parent on parent.run_id = child.parent_run_id "
                            "where child.kind in ('ingest', 'select')")
        assert {kind for kind, _, _ in stages} == {"ingest", "select"}
        assert all(parent == "flow" and same_prefect_run for _, parent, same_prefect_run in stages), stages
    finally:
        con.close()


def test_new_version_equals_a_from_scratch_selection_and_old_one_is_kept(incremental):
    v1, v2, scratch = (incremental[k]["selection"] for k in ("v1", "v2", "scratch"))
    assert v1["selection_id"] != v2["selection_id"]
    old, new, fresh = (_members(Path(s["path"])) for s in (v1, v2, scratch))
    assert len(old) == 10 and (incremental["root"] / "live" / "out" / "selections" / v1["selection_id"]).is_dir()
    columns = ["domain", "rank", "candidate_id"]
    assert new[columns].values.tolist() == fresh[columns].values.tolist()
    # float32 scores of the same candidate differ in the last bits when its shard and batch differ
    assert new["z"].to_numpy() == pytest.approx(fresh["z"].to_numpy(), abs=1e-5)
    # the refit over the larger pool moves z for members kept from the first version
    kept = old.merge(new, on="candidate_id", suffixes=("_old", "_new"))
    assert len(kept) and not (kept["z_old"] == kept["z_new"]).all()


def test_the_selection_parameters_licence_reaches_the_manifest_and_the_card(incremental):
    scratch, v1 = (Path(incremental[k]["selection"]["path"]) for k in ("scratch", "v1"))
    manifests = [orjson.loads((path / "manifest.json").read_bytes()) for path in (scratch, v1)]
    assert [manifest["license"] for manifest in manifests] == ["cc-by-4.0", "other"]
    assert "\nlicense: cc-by-4.0\n" in (scratch / "README.md").read_text()


def test_the_selection_parameters_split_reads_the_stored_profile(incremental):
    split, scratch = incremental["split"], incremental["scratch"]
    assert split["score"]["n_processed"] == 0  # nothing rescored
    manifest = orjson.loads((Path(split["selection"]["path"]) / "manifest.json").read_bytes())
    # the 4-block model scored D_late over blocks 3-4 (0.66); the flow read block 4 alone
    assert manifest["layer_split"]["late_layers"] == [4, 4] and manifest["layer_split"]["recomputed"] == ["late"]
    assert manifest["request"]["late"] == "last:1"
    fresh = orjson.loads((Path(scratch["selection"]["path"]) / "manifest.json").read_bytes())
    assert fresh["layer_split"]["late_layers"] == [3, 4] and fresh["layer_split"]["recomputed"] == []


def test_rescore_with_nothing_new_publishes_nothing(incremental):
    v3 = incremental["v3"]
    assert v3["score"]["n_processed"] == 0 and v3["ingest"]["files_skipped"] == 2 and "selection" not in v3
    assert any("no new selection version" in note for note in v3["notes"])
    published = list((incremental["root"] / "live" / "out" / "selections").glob("sel-*"))
    assert len(published) == 2


def test_lineage_from_a_published_line_back_to_its_source_line(incremental):
    selection = incremental["v2"]["selection"]
    directory = Path(selection["path"])
    lines = (directory / "data.jsonl").read_bytes().splitlines()
    parquet = _members(directory)
    con = open_db(incremental["root"] / "live" / "capsel.duckdb", read_only=True)
    try:
        for index in (0, len(lines) - 1):
            published = orjson.loads(lines[index])
            found = trace(con, parquet["candidate_id"][index])
            source = found.candidate
            raw = source["source_path"] and open(source["source_path"], "rb").read().splitlines()
            original = json.loads(raw[source["source_row"] - 1])
            assert (original["instruction"], original["response"]) == (published["instruction"], published["output"])
            assert source["source_sha256"] == hashlib.sha256(open(source["source_path"], "rb").read()).hexdigest()
            assert [s["selection_id"] for s in found.selections][-1] == selection["selection_id"]
            assert found.scores[0]["score_run_kind"] == "score_shard" and found.scores[0]["score_prefect_flow_run_id"]
            text = _rendered(found)
            assert f"row {source['source_row']}" in text and "shard run" in text and "prefect flow run" in text

        lineage = trace(con, selection["selection_id"])
        by_kind: dict = {}
        for run in lineage.runs:
            by_kind.setdefault(run["kind"], []).append(run)
        assert {r["run_id"] for r in by_kind["ingest"]} == {incremental["v1"]["ingest"]["run_id"],
                                                           incremental["v2"]["ingest"]["run_id"]}
        assert {r["run_id"] for r in by_kind["score"]} == {incremental["v1"]["score"]["run_id"],
                                                          incremental["v2"]["score"]["run_id"]}
        assert sum(r["n_members"] for r in by_kind["score"]) == 10
        assert all(r["n_shards"] >= 1 for r in by_kind["score"])
        assert len(by_kind["flow"]) == 2 and all(r["prefect_flow_run_id"] for r in by_kind["flow"])
        assert lineage.selection["select_parent_run_id"] in {r["run_id"] for r in by_kind["flow"]}
        assert {s["source_path"] for s in lineage.sources} <= {str(p) for p in incremental["files"]}
        assert " shards" in _rendered(lineage)
    finally:
        con.close()


def test_openlineage_events_for_every_flow_run(incremental):
    live = incremental["root"] / "live"
    events = [orjson.loads(line) for line in (live / "out" / "openlineage" / "events.jsonl").read_bytes().splitlines()]
    runs: dict = {}
    for event in events:
        validate_event(event)  # the 2-0-2 event and every facet, against the spec's schemas
        runs.setdefault(event["run"]["runId"], []).append(event)
    assert len(runs) == 3 and all([e["eventType"] for e in evs] == ["START", "COMPLETE"] for evs in runs.values())
    by_selection = {_tags(evs[-1]).get("capsel.selection_id"): evs[-1] for evs in runs.values()}
    v1, v2 = (by_selection[incremental[k]["selection"]["selection_id"]] for k in ("v1", "v2"))
    nothing_new = by_selection[None]
    con = open_db(live / "capsel.duckdb", read_only=True)
    try:
        prefect_ids = dict(_rows(con, "select run_id, prefect_flow_run_id from runs where kind = 'flow'"))
    finally:
        con.close()
    for evs in runs.values():
        parent = evs[-1]["run"]["facets"]["parent"]
        assert parent["run"]["runId"] == prefect_ids[uuid.UUID(evs[-1]["run"]["runId"]).hex]
        assert parent["job"]["name"] in {"capsel-select", "capsel-rescore"}

    inputs = {i["name"]: i for i in nothing_new["inputs"] if i["namespace"] == "file"}
    for path in incremental["files"]:
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        assert inputs[str(path.resolve())]["facets"]["version"]["datasetVersion"] == sha
    # the rescore that found nothing new read no row of any table and wrote none
    assert [d for d in nothing_new["inputs"] + nothing_new["outputs"] if d["namespace"] != "file"] == []
    assert nothing_new["outputs"] == []
    assert _tags(v1)["capsel.model_fingerprint"] and _tags(v1)["capsel.scoring_config_hash"]

    namespace = f"duckdb://{(live / 'capsel.duckdb').resolve()}"
    for event, counters in ((v1, incremental["v1"]), (v2, incremental["v2"])):
        written = {o["name"]: o["outputFacets"]["outputStatistics"]["rowCount"]
                   for o in event["outputs"] if o["namespace"] == namespace}
        totals = pd.DataFrame(counters["ingest"]["domains"]).T.sum()
        assert written["capsel.main.candidates"] == totals["n_inserted"]
        assert written.get("capsel.main.duplicates", 0) == totals["n_duplicates"]
        assert written["capsel.main.divergences"] == counters["score"]["n_processed"]
        assert written["capsel.main.selection_members"] == counters["selection"]["n_members"]
        assert "capsel.main.runs" not in written
        assert {"capsel.main.candidates", "capsel.main.divergences"} <= {
            i["name"] for i in event["inputs"] if i["namespace"] == namespace}
        _check_published_output(event, Path(counters["selection"]["path"]))
    assert written["capsel.main.duplicates"] >= 2  # v2's file repeats two of the first file's rows


def _tags(event: dict) -> dict:
    return {tag["key"]: tag["value"] for tag in event["run"]["facets"]["tags"]["tags"]}


def _check_published_output(event: dict, folder: Path) -> None:
    output = next(o for o in event["outputs"] if o["namespace"] == "file")
    assert output["name"] == str(folder.resolve())
    manifest = orjson.loads((folder / "manifest.json").read_bytes())
    assert output["facets"]["version"]["datasetVersion"] == manifest["selection_id"]
    assert [f["name"] for f in output["facets"]["schema"]["fields"]] == list(_members(folder).columns)
    stats = output["outputFacets"]["outputStatistics"]
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert (stats["rowCount"], stats["size"], stats["fileCount"]) == (
        manifest["n_members"], sum(p.stat().st_size for p in files), len(files))
    assertions = output["facets"]["dataQualityAssertions"]["assertions"]
    assert len(assertions) == manifest["gate"]["n_expectations"]  # one per GX expectation
    assert all(a["success"] for a in assertions) and manifest["gate"]["success"]
    validation = orjson.loads((folder / manifest["gate"]["validation"]).read_bytes())
    assert [a["assertion"] for a in assertions] == [
        r["expectation_config"]["type"] for table in validation["tables"].values() for r in table["results"]]
    columns = {a["column"] for a in assertions if "column" in a}
    assert {"candidate_id", "domain"} <= columns <= set(_members(folder).columns)
