"""Screenshots of what the Prefect UI shows for one capsel select flow run (for the README).

Starts a real `prefect server start` (with its UI) on 127.0.0.1 and a throwaway PREFECT_HOME, runs
`capsel flow select` on a tiny pool with the tests' 4-layer model, and captures the flow run page and
its artifacts with headless Chromium. Run from a checkout with the dev install:

    .venv/bin/python docs/screenshots/take_screenshots.py [--out docs/screenshots] [--keep]
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

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the tiny model and pool of the tests

from tests.support.flow_cli import run_flow_cli  # noqa: E402
from tests.support.flow_pool import flow_config, tiny_flow_model, write_pool_file  # noqa: E402
from tests.support.processes import free_port, kill_group, start_group, wait_healthy  # noqa: E402

WINDOW = "1400,1000"
# the UI is a single-page app: Chromium's virtual clock lets its scripts fetch and render before the capture
VIRTUAL_TIME_MS = 20_000


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if found := shutil.which(name):
            return found
    raise SystemExit("no Chromium on PATH (apt-get install chromium)")


def screenshot(url: str, path: Path, height: int = 1000) -> None:
    """One headless Chromium capture of `url` into `path`."""
    subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--window-size={WINDOW.split(',')[0]},{height}", f"--virtual-time-budget={VIRTUAL_TIME_MS}",
                    f"--screenshot={path}", url], check=True, capture_output=True, timeout=120)
    print(f"wrote {path}")


async def _run_and_artifacts() -> tuple[str, dict[str, str]]:
    """The select flow run's id and its artifacts' ids by kind (the last part of the key)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, FlowFilter, FlowFilterName

    async with get_client() as client:
        (run,) = await client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["capsel-select"])))
        artifacts = await client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[run.id])))
        return str(run.id), {a.key.rsplit("-", 1)[-1]: str(a.id) for a in artifacts if a.key}


def deploy(env: dict, work: Path) -> str:
    """Deploy infra/prefect.yaml (schedules paused) and return the on-demand deployment's id."""
    prefect = str(Path(sys.executable).with_name("prefect"))
    env = env | {"CAPSEL_PROJECT_DIR": str(ROOT), "CAPSEL_MODEL": "/models/my-model",
                 "CAPSEL_INCOMING_DIR": "/data/incoming"}
    for args in (["work-pool", "create", "capsel-local", "--type", "process", "--overwrite"],
                 ["deploy", "--all", "--prefect-file", "infra/prefect.yaml"],
                 ["deployment", "schedule", "pause", "--all"]):
        subprocess.run([prefect, "--no-prompt", *args], env=env, cwd=ROOT, check=True, capture_output=True)
    done = subprocess.run([prefect, "deployment", "inspect", "capsel-select/on-demand-select"], env=env, cwd=work,
                          check=True, capture_output=True, text=True)
    return done.stdout.split("'id': '", 1)[1].split("'", 1)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    parser.add_argument("--keep", action="store_true", help="leave the server running until Enter is pressed")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="capsel-screens-"))
    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith("CAPSEL_")} | {
        "PREFECT_API_URL": f"http://127.0.0.1:{port}/api", "PREFECT_HOME": str(work / "prefect"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_UI_API_URL": f"http://127.0.0.1:{port}/api",
        # the deployment's roots: the flow's parameters (db, outputs, sources, model) all lie in the work folder
        "CAPSEL_OUTPUT_ROOT": str(work), "CAPSEL_SOURCE_ROOTS": str(work), "CAPSEL_MODEL_ROOTS": str(work),
    }
    os.environ.update({key: env[key] for key in ("PREFECT_API_URL", "PREFECT_HOME")})
    server = start_group([str(Path(sys.executable).with_name("prefect")), "server", "start", "--host", "127.0.0.1",
                          "--port", str(port)], env, work / "server.log")
    try:
        wait_healthy(f"http://127.0.0.1:{port}/api/health", server, work / "server.log")
        model = tiny_flow_model(work / "model")
        source = write_pool_file(work / "incoming" / "pool.jsonl", 40, seed=7)
        config = flow_config(work, model, [str(source)], check_profile=False, selection={"budget": "25%"})
        done = run_flow_cli("select", config, env, work)
        if done.returncode != 0:
            raise SystemExit(done.stdout + done.stderr)
        run_id, artifacts = asyncio.run(_run_and_artifacts())
        ui = f"http://127.0.0.1:{port}"
        args.out.mkdir(parents=True, exist_ok=True)
        screenshot(f"{ui}/runs/flow-run/{run_id}", args.out / "flow-run.png")
        # the run page opens on its Logs tab (a ?tab= query is reset while the run loads): the artifacts page
        # lists the same artifacts, each under its key
        screenshot(f"{ui}/artifacts", args.out / "artifacts.png")
        screenshot(f"{ui}/artifacts/artifact/{artifacts['summary']}", args.out / "summary-artifact.png", 2900)
        screenshot(f"{ui}/artifacts/artifact/{artifacts['ingest']}", args.out / "ingest-artifact.png")
        # the form a custom run from the UI shows: one field per part, the deployment's values filled in
        screenshot(f"{ui}/deployments/deployment/{deploy(env, work)}/run", args.out / "custom-run-form.png", 2200)
        if args.keep:
            input(f"UI at {ui}; press Enter to stop the server ")
    finally:
        kill_group(server)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
