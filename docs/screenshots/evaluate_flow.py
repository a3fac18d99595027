"""Screenshots of the capsel-evaluate flow's artifacts (for the README): the metrics by method and their plot.

Starts a real `prefect server start` on 127.0.0.1 with a throwaway PREFECT_HOME, selects from a tiny pool with
the tests' 4-layer model, runs `capsel flow evaluate` (LlamaFactory in .venv-lf, two seeds) and captures the
artifacts with headless Chromium. Run from a checkout with the dev install and `make setup-llamafactory`:

    .venv/bin/python docs/screenshots/evaluate_flow.py [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

from capsel.orchestration.artifact_keys import ArtifactKeys

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from docs.screenshots.take_screenshots import screenshot  # noqa: E402
from tests.support.finetune_fixtures import tiny_base_model, tiny_rows  # noqa: E402
from tests.support.processes import free_port, kill_group, start_group, wait_healthy  # noqa: E402


async def _artifacts(db: Path) -> dict[str, str]:
    """The evaluate flow run's artifacts' ids by kind."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, FlowFilter, FlowFilterName

    async with get_client() as client:
        (run,) = await client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["capsel-evaluate"])))
        found = await client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[run.id])))
        keys = ArtifactKeys("evaluate", db)
        by_key = {a.key: str(a.id) for a in found if a.key}
        return {kind: by_key[keys.key(kind)] for kind in ("evaluation", "evaluation-summary")}


def capsel(env: dict, cwd: Path, *args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "capsel", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(done.stdout + done.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="capsel-screens-"))
    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith("CAPSEL_")} | {
        "PREFECT_API_URL": f"http://127.0.0.1:{port}/api", "PREFECT_HOME": str(work / "prefect"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "CAPSEL_DB_PATH": str(work / "capsel.duckdb"),
        "CAPSEL_OUTPUT_ROOT": str(work / "out"), "CAPSEL_THREADS": "1",
        "CAPSEL_TRAINER_PYTHON": str(ROOT / ".venv-lf" / "bin" / "python"),
    }
    os.environ.update({key: env[key] for key in ("PREFECT_API_URL", "PREFECT_HOME")})
    server = start_group([str(Path(sys.executable).with_name("prefect")), "server", "start", "--host", "127.0.0.1",
                          "--port", str(port)], env, work / "server.log")
    try:
        wait_healthy(f"http://127.0.0.1:{port}/api/health", server, work / "server.log")
        base = tiny_base_model(work / "base", layers=4)
        rows = tiny_rows(50)
        (work / "pool.jsonl").write_bytes(b"".join(orjson.dumps({**r, "domain": "toy"}) + b"\n" for r in rows[:40]))
        heldout = work / "out" / "eval" / "heldout.jsonl"
        heldout.parent.mkdir(parents=True)
        heldout.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows[40:]))
        capsel(env, work, "ingest", "pool.jsonl")
        capsel(env, work, "score", "--model", str(base))
        for method in ("cap", "random"):
            capsel(env, work, "select", "--budget", "25%", "--method", method, "--out", "sels")
        capsel(env, work, "flow", "evaluate", "--eval", f"loss:{heldout}", "--model", str(base), "--seed", "0",
               "--seed", "1")
        artifacts = asyncio.run(_artifacts(work / "capsel.duckdb"))
        ui = f"http://127.0.0.1:{port}"
        args.out.mkdir(parents=True, exist_ok=True)
        screenshot(f"{ui}/artifacts/artifact/{artifacts['evaluation-summary']}",
                   args.out / "evaluation-summary-artifact.png", 1300)
        screenshot(f"{ui}/artifacts/artifact/{artifacts['evaluation']}", args.out / "evaluation-artifact.png")
    finally:
        kill_group(server)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
