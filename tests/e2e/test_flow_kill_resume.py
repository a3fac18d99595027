"""SIGKILL the selection flow while it scores, rerun it: every candidate scored once, the same selection."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import orjson
import pandas as pd
import pytest

from capsel.db import open_db
from tests.support.flow_pool import flow_config, tiny_flow_model, write_pool_file
from tests.support.processes import kill_group

pytestmark = pytest.mark.e2e
MERGED = "merged a shard:"


def _flow_command(config_file) -> list[str]:
    return [sys.executable, "-m", "capsel", "flow", "select", "--config", str(config_file)]


def _kill_after_merges(prefect_server, config_file, n_merges: int, cwd) -> list[str]:
    """Run the flow and SIGKILL it as soon as it has logged `n_merges` committed shards."""
    process = subprocess.Popen(
        _flow_command(config_file), env=prefect_server.env(), cwd=cwd, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    guard = threading.Timer(240, lambda: kill_group(process, grace_s=0))
    guard.start()
    seen = []
    try:
        for line in process.stdout:
            seen.append(line)
            if sum(MERGED in text for text in seen) >= n_merges:
                os.kill(process.pid, signal.SIGKILL)  # the crash under test: no cleanup of any kind
                break
        process.wait(timeout=30)
    finally:
        guard.cancel()
        kill_group(process, grace_s=0)
    assert process.returncode == -signal.SIGKILL, "".join(seen[-40:])
    return seen


def test_killed_scoring_resumes_without_duplicates_and_selects_the_same(prefect_api, tmp_path):
    from capsel.flows.select_flow import select_flow

    model = tiny_flow_model(tmp_path / "model")
    source = write_pool_file(tmp_path / "in" / "pool.jsonl", 20, seed=5)
    config = flow_config(tmp_path / "killed", model, [str(source)],
                         scoring={"batch_size": 2}, runner={"max_in_flight": 1, "shard_size": 2})
    config_file = tmp_path / "flow.json"
    config_file.write_bytes(orjson.dumps(config.record()))

    _kill_after_merges(prefect_api, config_file, 3, tmp_path)
    db = tmp_path / "killed" / "capsel.duckdb"
    con = open_db(db, read_only=True)
    n_committed = con.execute("select count(*) from divergences").fetchone()[0]
    statuses = dict(con.execute("select kind, status from runs where kind in ('flow', 'score')").fetchall())
    con.close()
    assert 3 * 2 <= n_committed < 40 and n_committed % 2 == 0  # whole shards only
    assert statuses == {"flow": "running", "score": "running"}  # killed: nobody closed them

    rerun = subprocess.run(_flow_command(config_file), env=prefect_api.env(), cwd=tmp_path, capture_output=True,
                           text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    con = open_db(db, read_only=True)
    try:
        for table in ("divergences", "generations"):
            assert con.execute(f"select count(*), count(distinct candidate_id) from {table}").fetchone() == (40, 40)
        resumed = orjson.loads(con.execute(
            "select counters from runs where kind = 'score' and status = 'completed'").fetchone()[0])
        assert resumed["n_already_done"] == n_committed and resumed["n_processed"] == 40 - n_committed
        killed_dir = con.execute("select out_dir from selections").fetchone()[0]
    finally:
        con.close()

    reference = select_flow(**flow_config(tmp_path / "uninterrupted", model, [str(source)]).parameters())
    killed, clean = pd.read_parquet(f"{killed_dir}/data.parquet"), pd.read_parquet(
        f"{reference['selection']['path']}/data.parquet")
    columns = ["domain", "rank", "candidate_id"]
    assert killed[columns].values.tolist() == clean[columns].values.tolist()
    assert killed["z"].to_numpy() == pytest.approx(clean["z"].to_numpy(), abs=1e-5)
