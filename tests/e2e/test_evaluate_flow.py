"""The capsel-evaluate flow on a real Prefect server: each selection fine-tuned per seed, every model evaluated,
and the comparison left as artifacts on the run."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from capsel.orchestration.artifact_keys import ArtifactKeys
from tests.e2e.test_flow_artifacts import _artifacts
from tests.integration.test_finetune_llamafactory import FOUND, LF_PYTHON
from tests.support.finetune_fixtures import tiny_base_model, tiny_rows

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(
    FOUND is None, reason=f"LlamaFactory's environment is missing ({LF_PYTHON}): run `make setup-llamafactory`")]


def run(env: dict, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "capsel", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=900)


def test_the_evaluate_flow_trains_every_seed_and_leaves_the_comparison(prefect_api, tmp_path):
    env = prefect_api.env(CAPSEL_DB_PATH=str(tmp_path / "capsel.duckdb"), CAPSEL_OUTPUT_ROOT=str(tmp_path / "out"),
                          CAPSEL_TRAINER_PYTHON=str(LF_PYTHON), CAPSEL_THREADS="1")
    base = tiny_base_model(tmp_path / "base", layers=4)
    rows = [{**row, "domain": "toy"} for row in tiny_rows(30)]
    (tmp_path / "pool.jsonl").write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    for args in (("ingest", "pool.jsonl"), ("score", "--model", str(base)), ("select", "--budget", "50%")):
        done = run(env, tmp_path, *args, *(("--out", "sels") if args[0] == "select" else ()))
        assert done.returncode == 0, done.stdout + done.stderr
    heldout = tmp_path / "out" / "eval" / "heldout.jsonl"
    heldout.parent.mkdir(parents=True)
    heldout.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in tiny_rows(40)[30:]))

    done = run(env, tmp_path, "flow", "evaluate", "--eval", f"loss:{heldout}", "--model", str(base),
               "--seed", "0", "--seed", "1", "--epochs", "auto")
    assert done.returncode == 0, done.stdout + done.stderr
    counters = json.loads(done.stdout[done.stdout.index("{"):])
    assert len(counters["finetunes"]) == 2 and counters["n_results"] == 3  # 2 models + base, one domain

    keys = ArtifactKeys("evaluate", tmp_path / "capsel.duckdb")
    wanted = [keys.key(kind) for kind in ("evaluation", "evaluation-runs", "evaluation-summary", "progress",
                                          "evaluation-paired", "evaluation-forest")]
    found = {artifact.key: artifact for artifact, _ in asyncio.run(_artifacts(wanted))}
    assert set(found) == set(wanted)
    table = {row["label"]: row for row in json.loads(found[keys.key("evaluation")].data)}
    assert set(table) == {"cap 50%", "base model"} and table["cap 50%"]["n_seeds"] == 2
    runs = json.loads(found[keys.key("evaluation-runs")].data)
    assert {row["target"] for row in runs} == {*counters["finetunes"], f"base:{base}"}
    assert found[keys.key("evaluation-summary")].data.count("](data:image/png;base64,") == 1
    assert found[keys.key("progress")].data == 100.0
    # the selection's two seeds as one target against the base model, as `capsel evaluations --against` gives it
    [paired] = json.loads(found[keys.key("evaluation-paired")].data)
    listed = run(env, tmp_path, "evaluations", "--against", f"base:{base}", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [paired] == json.loads(listed.stdout)["comparisons"]
    assert (paired["against"], paired["seeds"], paired["domain"], paired["n"]) == (f"base:{base}", 2, "*", 10)
    assert {paired["target"]} == {row["selection_id"] for row in runs} - {None}
    assert paired["ci95"][0] <= paired["delta"] <= paired["ci95"][1]
    assert found[keys.key("evaluation-forest")].data.count("](data:image/png;base64,") == 1

    events = [json.loads(line) for line in (tmp_path / "out" / "openlineage" / "events.jsonl").read_text().splitlines()]
    finetunes = [event for event in events if event["job"]["name"] == "capsel.finetune"]
    assert sorted(event["outputs"][0]["name"] for event in finetunes) == sorted(
        str(tmp_path / "out" / "models" / finetune_id) for finetune_id in counters["finetunes"])
    assert all(event["inputs"][0]["name"].startswith(str(tmp_path / "sels")) for event in finetunes)
    (evaluated,) = [event for event in events if event["job"]["name"] == "capsel.evaluate"]
    assert str(heldout) in {dataset["name"] for dataset in evaluated["inputs"]}
    assert evaluated["outputs"][0]["name"].endswith(".evaluations")

    outside = tmp_path / "heldout.jsonl"  # a run's parameters may not name a file outside the allowed folders
    outside.write_bytes(heldout.read_bytes())
    refused = run(env, tmp_path, "flow", "evaluate", "--eval", f"loss:{outside}", "--model", str(base))
    assert refused.returncode == 3 and "outside the output root" in refused.stderr
    assert "Traceback" not in refused.stderr
