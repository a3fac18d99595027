"""What the Prefect UI shows for flows started from the CLI: progress on the run the user opens, plots and
ingest counts in the summary, and a rescore's change since the previous version of its selection."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys

import pandas as pd
import pytest

from capsel.compare.metrics import jaccard
from capsel.orchestration.artifact_keys import ArtifactKeys
from tests.support.flow_cli import run_flow_cli
from tests.support.flow_pool import flow_config, tiny_flow_model, write_pool_file

pytestmark = pytest.mark.e2e


async def _artifacts(keys: list[str]):
    """Every artifact under `keys`, each with its flow run."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    async with get_client() as client:
        artifacts = await client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=keys)))
        return [(artifact, await client.read_flow_run(artifact.flow_run_id)) for artifact in artifacts]


def _ids(selection_dir) -> set[str]:
    return set(pd.read_parquet(selection_dir / "data.parquet")["candidate_id"])


def test_select_then_rescore_as_the_ui_shows_them(prefect_api, tmp_path):
    model = tiny_flow_model(tmp_path / "model")
    incoming = tmp_path / "incoming"
    write_pool_file(incoming / "a.jsonl", 10, seed=1)
    config = flow_config(tmp_path, model, [str(incoming)], check_profile=False)
    env = prefect_api.env()
    first = run_flow_cli("select", config, env, tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    write_pool_file(incoming / "b.jsonl", 10, seed=2)
    second = run_flow_cli("rescore", config, env, tmp_path)
    assert second.returncode == 0, second.stdout + second.stderr
    v1, v2 = sorted((tmp_path / "out" / "selections").glob("sel-*"))

    db = tmp_path / "capsel.duckdb"
    select, rescore = ArtifactKeys("select", db), ArtifactKeys("rescore", db)
    found = asyncio.run(_artifacts([keys.key(kind) for keys in (select, rescore)
                                    for kind in ("summary", "progress", "ingest")]))
    by_key = {artifact.key: (artifact, run) for artifact, run in found}
    assert set(by_key) == {keys.key(kind) for keys in (select, rescore) for kind in ("summary", "progress", "ingest")}

    for keys in (select, rescore):
        summary, run = by_key[keys.key("summary")]
        progress, progress_run = by_key[keys.key("progress")]
        # the progress artifact is the parent's (the run with the summary), not the scoring subflow's
        assert progress_run.id == run.id and progress_run.parent_task_run_id is None
        assert progress.data == 100.0
        assert summary.data.count("](data:image/png;base64,") == 4
    ingest = {row["domain"]: row for row in json.loads(by_key[rescore.key("ingest")][0].data)}
    assert ingest["total"]["read"] == 22 and ingest["total"]["inserted"] == 20  # only b.jsonl is new
    assert by_key[select.key("summary")][0].data.count("Changes since") == 0  # a first version
    first_ingest = {row["domain"]: row for row in json.loads(by_key[select.key("ingest")][0].data)}
    # the rescore's funnel starts from every row both runs read, and ends at the members it published
    funnel_read = re.search(r"\| read \| ([\d,]+) \|", by_key[rescore.key("summary")][0].data).group(1)
    assert int(funnel_read.replace(",", "")) == ingest["total"]["read"] + first_ingest["total"]["read"]
    selected = re.search(r"\| selected \| ([\d,]+) \|", by_key[rescore.key("summary")][0].data).group(1)
    assert int(selected) == len(_ids(v2))

    rescored = by_key[rescore.key("summary")][0].data
    before, now = _ids(v1), _ids(v2)
    expected = (f"since `{v1.name}`: {len(now - before)} member(s) added, {len(before - now)} dropped, "
                f"Jaccard overlap {jaccard(now, before):.3f}")
    assert expected in rescored and now != before
    added = re.search(r"- added: (.*)", rescored).group(1)
    assert set(re.findall(r"`([^`]+)`", added)) == now - before


def test_a_standalone_score_flow_keeps_its_own_progress(prefect_api, tmp_path):
    model = tiny_flow_model(tmp_path / "model")
    source = write_pool_file(tmp_path / "pool.jsonl", 3, seed=3)
    db = tmp_path / "capsel.duckdb"
    for args in (["ingest", str(source)], ["flow", "score", "--model", str(model), "--device", "cpu"]):
        done = subprocess.run([sys.executable, "-m", "capsel", *args, "--db", str(db)], cwd=tmp_path,
                              env=prefect_api.env(), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
    ((progress, run),) = asyncio.run(_artifacts([ArtifactKeys("score", db).key("progress")]))
    assert run.name and run.parent_task_run_id is None and progress.data == 100.0
