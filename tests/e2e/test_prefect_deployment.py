"""Deploy infra/prefect.yaml to a real Prefect server, run the selection deployment through a worker."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import subprocess
import time
from pathlib import Path

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
    """A process worker on the capsel-local pool (limited to one run at a time), killed with its group."""
    _prefect(prefect_server, "work-pool", "create", "capsel-local", "--type", "process", "--overwrite")
    _prefect(prefect_server, "work-pool", "set-concurrency-limit", "capsel-local", "1")
    log = tmp_path / "worker.log"
    process = start_group([PREFECT, "worker", "start", "--pool", "capsel-local", "--type", "process"],
                          prefect_server.env(), log, cwd=tmp_path)
    yield log
    kill_group(process)


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
    deployed = _prefect(
        prefect_api, "deploy", "--all", "--prefect-file", "infra/prefect.yaml",
        CAPSEL_PROJECT_DIR=str(ROOT), CAPSEL_MODEL=str(model), CAPSEL_INCOMING_DIR=str(tmp_path / "incoming"),
    )
    assert "capsel-select/on-demand-select" in deployed and "capsel-rescore/nightly-rescore" in deployed

    config = flow_config(tmp_path, model, [str(source)], selection={"budget": "4"})
    started = _prefect(prefect_api, "deployment", "run", "capsel-select/on-demand-select",
                       "--params", json.dumps({"config": config.record()}))
    flow_run_id = re.search(r"UUID:\s*([0-9a-f-]{36})", started).group(1)
    run = asyncio.run(_wait_for_final_state(flow_run_id, 240))
    assert run.state.is_completed(), f"{run.state}\n{worker.read_text()[-4000:]}"
    # the pydantic parameter round-trips through the API as the form would send it
    assert run.parameters["config"]["selection"]["budget"] == "4"

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
    started = _prefect(server, "deployment", "run", "capsel-select/on-demand-select",
                       "--params", json.dumps({"config": config.record()}))
    flow_run_id = re.search(r"UUID:\s*([0-9a-f-]{36})", started).group(1)
    return asyncio.run(_wait_for_final_state(flow_run_id, timeout_s))


def test_a_deployment_selects_by_ppl_and_by_kcenter(prefect_api, worker, tmp_path):
    from tests.fixtures.tiny_aux_models import save_encoder_dir

    model = tiny_flow_model(tmp_path / "model")
    encoder = save_encoder_dir(tmp_path / "encoder")
    _prefect(prefect_api, "deploy", "--all", "--prefect-file", "infra/prefect.yaml",
             CAPSEL_PROJECT_DIR=str(ROOT), CAPSEL_MODEL=str(model), CAPSEL_INCOMING_DIR=str(tmp_path / "incoming"))
    source = write_pool_file(tmp_path / "in" / "pool.jsonl", 12, seed=5)
    scorings = {
        "ppl": {"method": "ppl", "model": {"path": str(model), "dtype": "float32", "device": "cpu"}},
        "kcenter": {"method": "kcenter", "encoder": {"path": str(encoder), "device": "cpu"}},
    }
    for method, scoring in scorings.items():
        config = flow_config(tmp_path / method, model, [str(source)], scoring=scoring, check_profile=False,
                             selection={"budget": "3", "method": method})
        run = _run_deployment(prefect_api, config)
        assert run.state.is_completed(), f"{run.state}\n{worker.read_text()[-4000:]}"
        (published,) = sorted((tmp_path / method / "out" / "selections").glob("sel-*"))
        manifest = orjson.loads((published / "manifest.json").read_bytes())
        assert manifest["method"] == method and manifest["gate"]["success"]
        assert manifest["n_members"] == 6 and sorted(d["k"] for d in manifest["domains"]) == [3, 3]
        assert manifest["request"]["method"] == method
