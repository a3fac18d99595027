"""Deploy infra/prefect.yaml to a real Prefect server, run the selection deployment through a worker."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import shlex
import subprocess
import time
from datetime import timedelta
from pathlib import Path

import duckdb
import orjson
import pandas as pd
import pytest

from tests.e2e.conftest import PREFECT
from tests.support.flow_pool import flow_config, tiny_flow_model, write_pool_file
from tests.support.processes import kill_group, start_group

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def _prefect(server, *args: str, **env: str) -> str:
    done = subprocess.run([PREFECT, "--no-prompt", *args], cwd=ROOT, env=server.env(**env), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture()
def worker(prefect_server, tmp_path):
    """A process worker on the capsel-local pool (limited to one run at a time), killed with its group.

    Its runs default to the test's database and output root (flow_config's paths), as a worker
    configured with CAPSEL_DB_PATH and CAPSEL_OUTPUT_ROOT would.
    """
    _prefect(prefect_server, "work-pool", "create", "capsel-local", "--type", "process", "--overwrite")
    _prefect(prefect_server, "work-pool", "set-concurrency-limit", "capsel-local", "1")
    log = tmp_path / "worker.log"
    env = prefect_server.env(CAPSEL_DB_PATH=str(tmp_path / "capsel.duckdb"), CAPSEL_OUTPUT_ROOT=str(tmp_path / "out"))
    process = start_group([PREFECT, "worker", "start", "--pool", "capsel-local", "--type", "process"], env, log,
                          cwd=tmp_path)
    yield log
    kill_group(process)


def _deploy(server, model: Path, incoming: Path, schedules: str = "paused") -> str:
    """Deploy infra/prefect.yaml; with a worker running, the nightly schedule is paused (a run due at 02:00 UTC
    would otherwise be picked up by the test's worker)."""
    deployed = _prefect(server, "deploy", "--all", "--prefect-file", "infra/prefect.yaml", CAPSEL_PROJECT_DIR=str(ROOT),
                        CAPSEL_MODEL=str(model), CAPSEL_INCOMING_DIR=str(incoming))
    if schedules == "paused":
        _prefect(server, "deployment", "schedule", "pause", "--all")
    return deployed


async def _wait_for_final_state(flow_run_id: str, timeout_s: float):
    from prefect.client.orchestration import get_client

    async with get_client() as client:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            run = await client.read_flow_run(flow_run_id)
            if run.state and run.state.is_final():
                return run
            await asyncio.sleep(1)
    raise TimeoutError(f"flow run {flow_run_id} not finished after {timeout_s}s")


async def _artifacts(flow_run_ids: list[str]):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        FlowRunFilter,
        FlowRunFilterParentFlowRunId,
    )

    async with get_client() as client:
        children = await client.read_flow_runs(
            flow_run_filter=FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=flow_run_ids))
        )
        ids = flow_run_ids + [str(child.id) for child in children]
        return await client.read_artifacts(artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=ids)))


def test_deploy_run_and_read_artifacts(prefect_api, worker, tmp_path):
    model = tiny_flow_model(tmp_path / "model")
    source = write_pool_file(tmp_path / "in" / "pool.jsonl", 15, seed=2)
    deployed = _deploy(prefect_api, model, tmp_path / "incoming")
    assert "capsel-select/on-demand-select" in deployed and "capsel-rescore/nightly-rescore" in deployed

    config = flow_config(tmp_path, model, [str(source)], selection={"budget": "4"})
    started = _prefect(prefect_api, "deployment", "run", "capsel-select/on-demand-select",
                       "--params", json.dumps(config.record()))
    flow_run_id = re.search(r"UUID:\s*([0-9a-f-]{36})", started).group(1)
    run = asyncio.run(_wait_for_final_state(flow_run_id, 240))
    assert run.state.is_completed(), f"{run.state}\n{worker.read_text()[-4000:]}"
    # the pydantic parameter round-trips through the API as the form would send it
    assert run.parameters["selection"]["budget"] == "4"

    published = sorted((tmp_path / "out" / "selections").glob("sel-*"))
    assert len(published) == 1
    manifest = orjson.loads((published[0] / "manifest.json").read_bytes())
    members = pd.read_parquet(published[0] / "data.parquet")
    assert manifest["n_members"] == len(members) == 8 and manifest["gate"]["success"]
    assert sorted(members.groupby("domain").size().items()) == [("code", 4), ("math", 4)]

    artifacts = asyncio.run(_artifacts([flow_run_id]))
    # keys named independently of ArtifactKeys: flow, deployment, db stem, hash of the db's absolute path
    digest = hashlib.sha256(str((tmp_path / "capsel.duckdb").resolve()).encode()).hexdigest()[:8]
    prefix = f"capsel-select-on-demand-select-capsel-{digest}-"
    by_key = {a.key: a for a in artifacts}
    assert {a.key for a in artifacts if str(a.flow_run_id) == flow_run_id} == {
        prefix + kind for kind in ("summary", "ingest", "selection", "progress", "report", "gate", "manifest", "data")
    }  # the progress artifact too sits on the run the user opened, not on the scoring subflow
    summary = by_key[prefix + "summary"].data
    assert manifest["selection_id"] in summary and "| code | 15 |" in summary and "α" in summary
    assert summary.count("](data:image/png;base64,") == 4  # scatter and z histogram of both domains
    table = json.loads(by_key[prefix + "selection"].data)
    assert sorted(row["candidate_id"] for row in table) == sorted(members["candidate_id"])
    ingest = {row["domain"]: row for row in json.loads(by_key[prefix + "ingest"].data)}
    assert ingest["total"]["inserted"] == 30 and ingest["total"]["duplicates"] == 1
    assert by_key[prefix + "progress"].data == 100.0
    report_link = re.search(r"\((file://[^)]+)\)", by_key[prefix + "report"].data).group(1)
    assert Path(report_link[len("file://"):]) == published[0].resolve() / "report" / "index.html"
    assert Path(report_link[len("file://"):]).is_file()
    deployments = _prefect(prefect_api, "deployment", "inspect", "capsel-rescore/nightly-rescore")
    assert "0 2 * * *" in deployments


def _run_deployment(server, config, timeout_s: float = 240):
    return _run(server, "--params", json.dumps(config.record()), timeout_s=timeout_s)


def _run(server, *params: str, timeout_s: float = 240):
    """Start a run of the selection deployment with these `prefect deployment run` options; its final state."""
    started = _prefect(server, "deployment", "run", "capsel-select/on-demand-select", *params)
    flow_run_id = re.search(r"UUID:\s*([0-9a-f-]{36})", started).group(1)
    return asyncio.run(_wait_for_final_state(flow_run_id, timeout_s))


def test_a_run_overrides_the_budget_alone_and_defaults_to_the_incoming_folder(prefect_api, worker, tmp_path):
    model = tiny_flow_model(tmp_path / "model")
    incoming = tmp_path / "incoming"
    write_pool_file(incoming / "pool.jsonl", 15, seed=4)
    _deploy(prefect_api, model, incoming)
    # one field of one part, as `prefect deployment run --param` or the UI's custom run sends it
    run = _run(prefect_api, "--param", 'selection={"budget": "3"}')
    assert run.state.is_completed(), f"{run.state}\n{worker.read_text()[-4000:]}"
    assert run.parameters["selection"] == {"budget": "3"}
    # the other parts are the deployment's: its incoming folder (what a Quick Run ingests) and its model
    assert run.parameters["sources"] == {"paths": [str(incoming)]}
    assert run.parameters["scoring"] == {"method": "cap", "model": {"path": str(model)}}

    (published,) = sorted((tmp_path / "out" / "selections").glob("sel-*"))
    manifest = orjson.loads((published / "manifest.json").read_bytes())
    assert manifest["method"] == "cap" and manifest["gate"]["success"]
    assert sorted((d["domain"], d["k"]) for d in manifest["domains"]) == [("code", 3), ("math", 3)]
    con = duckdb.connect(str(tmp_path / "capsel.duckdb"), read_only=True)
    try:
        assert con.execute("select count(*) from candidates").fetchone() == (30,)
    finally:
        con.close()


def documented_run() -> list[str]:
    """The options of the `prefect deployment run` the flow-parameter page shows (the README shows the same line)."""
    page = (ROOT / "docs" / "reference" / "parameters.md").read_text()
    (command,) = [line for line in page.splitlines() if line.startswith("prefect deployment run ")]
    assert command in (ROOT / "README.md").read_text()
    args = shlex.split(command)
    assert args[:4] == ["prefect", "deployment", "run", "capsel-select/on-demand-select"]
    return args[4:]


def test_a_run_maps_fields_and_names_the_domain_keeping_the_deployments_source_paths(prefect_api, worker, tmp_path):
    model = tiny_flow_model(tmp_path / "model")
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    rows = [{"question": " ".join(f"w{10 + i * 3 + k}" for k in range(3)),
             "answer": " ".join(f"w{200 + i * 7 + k}" for k in range(8))} for i in range(12)]
    (incoming / "gsm.jsonl").write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    _deploy(prefect_api, model, incoming)
    # the docs' example as printed: --map and --domain of a deployment run are sources.field_map and sources.domain
    documented = documented_run()
    (sources,) = [json.loads(arg.split("=", 1)[1]) for arg in documented if arg.startswith("sources=")]
    assert set(sources) == {"field_map", "domain"}
    run = _run(prefect_api, *documented, "--param", 'selection={"budget": "25%"}')
    assert run.state.is_completed(), f"{run.state}\n{worker.read_text()[-4000:]}"
    # Prefect hands the run the part as given; capsel completes it from the deployment's (paths, out)
    assert run.parameters["sources"] == sources
    con = duckdb.connect(str(tmp_path / "capsel.duckdb"), read_only=True)
    try:
        assert con.execute("select domain, count(*) from candidates group by domain").fetchall() == [
            (sources["domain"], 12)]
        assert con.execute("select count(*) from quarantine").fetchone() == (0,)
    finally:
        con.close()
    (published,) = sorted((tmp_path / "out" / "selections").glob("sel-*"))  # the deployment's selection.out
    assert orjson.loads((published / "manifest.json").read_bytes())["domains"][0]["k"] == 3


def test_a_run_whose_parameters_leave_the_deployments_roots_fails_before_anything_is_written(
        prefect_api, worker, tmp_path):
    model = tiny_flow_model(tmp_path / "model")
    write_pool_file(tmp_path / "incoming" / "pool.jsonl", 10, seed=6)
    _deploy(prefect_api, model, tmp_path / "incoming")
    elsewhere = tmp_path / "elsewhere"
    # what a Custom run in the UI can send: an output root of its own, a model running its checkpoint's code
    escaped = _run(prefect_api, "--param", f"output_root={elsewhere}")
    assert escaped.state.is_failed(), f"{escaped.state}\n{worker.read_text()[-4000:]}"
    assert escaped.state.message == (f"RunParameterError: run parameter output_root {str(elsewhere)!r} is outside "
                                     f"{str(tmp_path / 'out')!r} (CAPSEL_OUTPUT_ROOT)")
    scoring = {"method": "cap", "model": {"path": str(model), "trust_remote_code": True}}
    remote_code = _run(prefect_api, "--param", f"scoring={json.dumps(scoring)}")
    assert remote_code.state.is_failed()
    assert "scoring.model.trust_remote_code runs code shipped with the checkpoint" in remote_code.state.message
    assert "CAPSEL_ALLOW_REMOTE_CODE=true" in remote_code.state.message
    assert not elsewhere.exists() and not (tmp_path / "out").exists() and not (tmp_path / "capsel.duckdb").exists()


async def _scheduled_runs(deployment_name: str):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        DeploymentFilter,
        DeploymentFilterName,
        FlowRunFilter,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType

    async with get_client() as client:
        return await client.read_flow_runs(
            deployment_filter=DeploymentFilter(name=DeploymentFilterName(any_=[deployment_name])),
            flow_run_filter=FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(
                any_=[StateType.SCHEDULED]))),
        )


def test_the_scheduler_creates_runs_of_the_nightly_deployment(prefect_api, tmp_path):
    # Prefect's scheduler inserts the next runs of a new deployment within seconds; with SQLAlchemy 2.1 its
    # insert failed once a minute and no run was ever created while the UI showed the schedule as active
    _prefect(prefect_api, "work-pool", "create", "capsel-local", "--type", "process", "--overwrite")
    _deploy(prefect_api, tmp_path / "model", tmp_path / "incoming", schedules="active")
    try:
        deadline, runs = time.monotonic() + 120, []
        while not runs and time.monotonic() < deadline:
            time.sleep(2)
            runs = asyncio.run(_scheduled_runs("nightly-rescore"))
        assert runs, "no scheduled run of nightly-rescore after 120 s"
        starts = sorted(run.expected_start_time for run in runs)
        assert all((start.hour, start.minute, start.second) == (2, 0, 0) for start in starts)
        assert all(start.utcoffset().total_seconds() == 0 for start in starts)
        assert all(later - earlier == timedelta(days=1) for earlier, later in zip(starts, starts[1:]))
        assert not asyncio.run(_scheduled_runs("on-demand-select"))
    finally:
        # nothing is left that a later test's worker could pick up at 02:00 UTC
        _prefect(prefect_api, "deployment", "delete", "capsel-rescore/nightly-rescore")


def test_a_deployment_selects_by_ppl_and_by_kcenter(prefect_api, worker, tmp_path):
    from tests.fixtures.tiny_aux_models import save_encoder_dir

    model = tiny_flow_model(tmp_path / "model")
    encoder = save_encoder_dir(tmp_path / "encoder")
    _deploy(prefect_api, model, tmp_path / "incoming")
    source = write_pool_file(tmp_path / "in" / "pool.jsonl", 12, seed=5)
    scorings = {
        "ppl": {"method": "ppl", "model": {"path": str(model), "dtype": "float32", "device": "cpu"}},
        "kcenter": {"method": "kcenter", "encoder": {"path": str(encoder), "device": "cpu"}},
    }
    for method, scoring in scorings.items():
        # each method's database and outputs in a folder of the worker's output root, where a run may put them
        config = flow_config(tmp_path / "out" / method, model, [str(source)], scoring=scoring, check_profile=False,
                             selection={"budget": "3", "method": method})
        run = _run_deployment(prefect_api, config)
        assert run.state.is_completed(), f"{run.state}\n{worker.read_text()[-4000:]}"
        (published,) = sorted((tmp_path / "out" / method / "out" / "selections").glob("sel-*"))
        manifest = orjson.loads((published / "manifest.json").read_bytes())
        assert manifest["method"] == method and manifest["gate"]["success"]
        assert manifest["n_members"] == 6 and sorted(d["k"] for d in manifest["domains"]) == [3, 3]
        assert manifest["request"]["method"] == method
