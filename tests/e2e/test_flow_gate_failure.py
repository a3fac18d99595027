"""A flow run whose data-quality gate refuses the selection ends Failed and says why, on a real Prefect server."""

from __future__ import annotations

import asyncio
import html
import sys

import duckdb
import httpx
import orjson
import pandas as pd
import pytest

from capsel.orchestration.artifact_keys import ArtifactKeys
from tests.support.flow_cli import run_flow_cli
from tests.support.flow_pool import flow_config, tiny_flow_model, write_pool_file
from tests.support.openlineage_schema import validate_event
from tests.support.processes import free_port, kill_group, start_group, wait_healthy

pytestmark = pytest.mark.e2e


async def _artifacts_by_key(keys: list[str]):
    """Each artifact of `keys` with the flow run that made it."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    async with get_client() as client:
        artifacts = await client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=keys)))
        return [(artifact, await client.read_flow_run(artifact.flow_run_id)) for artifact in artifacts]


def test_a_refused_selection_fails_the_run_and_names_the_failing_expectations(prefect_api, tmp_path):
    model = tiny_flow_model(tmp_path / "model")
    source = write_pool_file(tmp_path / "in" / "pool.jsonl", 6, seed=4)
    config = flow_config(tmp_path, model, [str(source)], check_profile=False, selection={"budget": "100%"})
    out = tmp_path / "out"
    out.mkdir()
    port = free_port()
    server = start_group([sys.executable, "-m", "capsel", "serve", "--root", str(out), "--port", str(port)],
                         prefect_api.env(), tmp_path / "serve.log", cwd=tmp_path)
    try:
        wait_healthy(f"http://127.0.0.1:{port}/", server, tmp_path / "serve.log", timeout_s=60)
        env = prefect_api.env(CAPSEL_OUTPUTS_URL=f"http://127.0.0.1:{port}")
        first = run_flow_cli("select", config, env, tmp_path)
        assert first.returncode == 0, first.stdout + first.stderr
        (published,) = (out / "selections").glob("sel-*")
        member = pd.read_parquet(published / "data.parquet")["candidate_id"].iloc[0]
        # a scored member's response went blank in the store after scoring (a bad manual fix, a buggy
        # migration): the next selection holds it and the gate's text check must refuse it
        con = duckdb.connect(str(tmp_path / "capsel.duckdb"))
        con.execute("update candidates set response = '  ' where candidate_id = ?", [member])
        con.close()

        second = run_flow_cli("select", config, env, tmp_path)
        assert second.returncode == 4, second.stdout + second.stderr  # ExitCode.GATE_FAILED
        keys = ArtifactKeys("select", tmp_path / "capsel.duckdb")
        found = {artifact.key: (artifact, run) for artifact, run in
                 asyncio.run(_artifacts_by_key([keys.key(kind) for kind in ("gate-failure", "gate-report", "report")]))}
        failure, run = found[keys.key("gate-failure")]
        assert run.state.is_failed()
        listed = [line for line in failure.data.splitlines() if line.startswith("- ")]
        assert len(listed) == 1 and "1 expectation(s) failed" in failure.data, failure.data
        shown = html.unescape(listed[0])  # data in the Markdown is written as entities: the UI shows the characters
        assert "expect_column_values_to_not_match_regex(column='response'" in shown and member in shown
        report, report_run = found[keys.key("gate-report")]
        assert report_run.id == run.id
        link = report.data[report.data.index("(") + 1:report.data.rindex(")")]
        assert link.startswith(f"http://127.0.0.1:{port}/selections/rejected/sel-"), link
        page = httpx.get(link)
        assert page.status_code == 200 and "<html" in page.text.lower()
        # the first (passing) run's report link goes through the server too
        first_report, first_run = found[keys.key("report")]
        assert first_run.state.is_completed()
        assert f"(http://127.0.0.1:{port}/selections/{published.name}/report/index.html)" in first_report.data
        assert "<img" in httpx.get(f"http://127.0.0.1:{port}/selections/{published.name}/report/index.html").text
        assert len(list((out / "selections").glob("sel-*"))) == 1  # nothing new was published
        _check_fail_event(out / "openlineage" / "events.jsonl")
    finally:
        kill_group(server)


def _check_fail_event(events_file) -> None:
    """The refused run's FAIL event: spec-valid, the gate's error, the pool it read, nothing it published."""
    events = [orjson.loads(line) for line in events_file.read_bytes().splitlines()]
    for event in events:
        validate_event(event)
    failed = events[-1]
    assert failed["eventType"] == "FAIL"
    assert failed["run"]["facets"]["errorMessage"]["message"].startswith("GateFailedError")
    assert any(i["name"].endswith(".main.divergences") for i in failed["inputs"])
    # nothing new to ingest or score, and the selection was refused: no output at all
    assert failed["outputs"] == []
