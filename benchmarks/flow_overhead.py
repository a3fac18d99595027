"""Fixed cost of a flow run: wall time of `capsel flow select` on N rows and of a no-op `capsel flow rescore`,
minus the work inside them (the ingest, score and select runs the flow records in its DuckDB file).

The overhead is what a user waits for besides the work: process start and imports, the Prefect
server (a temporary one when PREFECT_API_URL is unset), the rank-profile survey, the gate and
publish steps outside the recorded runs. Three commands on one database: a first select on N rows,
a no-op rescore of the same folder, then a select that ingests N new rows (warm: files in the page
cache, the profile verdict cached where capsel caches it).

By default the script starts one long-lived `prefect server start` on 127.0.0.1 and points every
command at it (--temporary-server: leave PREFECT_API_URL unset, so each command starts its own).
Prints one JSON object.

    .venv/bin/python benchmarks/flow_overhead.py --model smollm2-135m-instruct --rows 50
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import httpx

POOL = Path(__file__).resolve().parents[1] / "capsel" / "data" / "real_pool" / "pool.jsonl"
WORK_KINDS = ("ingest", "generate", "score", "select")


def write_rows(path: Path, n_rows: int, skip: int = 0) -> None:
    lines = POOL.read_text().splitlines()[skip:skip + n_rows]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def start_server(home: Path) -> tuple[subprocess.Popen, str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    server = subprocess.Popen([str(Path(sys.executable).with_name("prefect")), "server", "start", "--host",
                               "127.0.0.1", "--port", str(port)], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    api_url = f"http://127.0.0.1:{port}/api"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{api_url}/health").status_code == 200:
                return server, api_url
        except httpx.TransportError:
            time.sleep(0.5)
    raise SystemExit("prefect server did not start in 180 s")


def work_seconds(db: Path, flow_run_id: str) -> dict:
    """Seconds of each recorded run under the flow run (what the flow does, not what it costs to start)."""
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "select kind, sum(epoch(finished_at) - epoch(started_at)) from runs "
            "where parent_run_id = ? or parent_run_id in (select run_id from runs where parent_run_id = ?) "
            "group by kind", [flow_run_id, flow_run_id]).fetchall()
        flow = con.execute("select epoch(finished_at) - epoch(started_at) from runs where run_id = ?",
                           [flow_run_id]).fetchone()
    return {"flow_run_s": round(flow[0], 2), **{kind: round(seconds, 2) for kind, seconds in rows}}


def timed_flow(command: str, args: list[str], env: dict, db: Path) -> dict:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "capsel", "flow", command, *args, "--db", str(db)], env=env,
                          capture_output=True, text=True)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"capsel flow {command} failed:\n{done.stderr[-3000:]}")
    with duckdb.connect(str(db), read_only=True) as con:
        (flow_run_id,) = con.execute(
            "select run_id from runs where kind = 'flow' order by started_at desc limit 1").fetchone()
    work = work_seconds(db, flow_run_id)
    inside = sum(seconds for kind, seconds in work.items() if kind in WORK_KINDS)
    return {"wall_s": round(wall, 2), "work_s": round(inside, 2), "overhead_s": round(wall - inside, 2),
            "runs": work, "log_lines": len((done.stdout + done.stderr).splitlines()),
            "tracebacks": (done.stdout + done.stderr).count("Traceback"),
            "loading_weights_bars": (done.stdout + done.stderr).count("Loading weights")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m-instruct", help="installed model name or folder")
    parser.add_argument("--rows", type=int, default=50, help="rows of the bundled real pool the select ingests")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--temporary-server", action="store_true",
                        help="leave PREFECT_API_URL unset: every command starts a temporary server")
    parser.add_argument("--label", default="", help="a name for this measurement (e.g. before, after)")
    options = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="capsel-flow-overhead-"))
    server = None
    env = {**os.environ, "PREFECT_HOME": str(folder / "prefect"), "CAPSEL_OUTPUT_ROOT": str(folder / "out")}
    env.pop("PREFECT_API_URL", None)
    if not options.temporary_server:
        server, env["PREFECT_API_URL"] = start_server(folder / "prefect")
    try:
        first, second = folder / "first", folder / "second"
        write_rows(first / "pool.jsonl", options.rows)
        write_rows(second / "pool.jsonl", options.rows, skip=options.rows)
        common = ["--model", options.model, "--device", "cpu", "--threads", str(options.threads), "--budget", "10%"]
        db = folder / "capsel.duckdb"
        results = {"label": options.label, "model": options.model, "rows": options.rows,
                   "server": "temporary per command" if options.temporary_server else "running (prefect server start)"}
        results["select_first"] = timed_flow("select", ["--input", str(first), *common], env, db)
        results["rescore_noop"] = timed_flow("rescore", ["--input", str(first), *common], env, db)
        results["select_new_rows"] = timed_flow("select", ["--input", str(second), *common], env, db)
        print(json.dumps(results, indent=2))
    finally:
        if server is not None:
            os.killpg(server.pid, 15)
            server.wait()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
