"""The `runs` table: every ingest, generate, score, select and flow run, with its outcome."""

from __future__ import annotations

import os
import uuid
from contextlib import contextmanager
from typing import Any, Iterator

import duckdb
import orjson

from capsel.db import one_row, run_sql
from capsel.db.progress_file import report_stage
from capsel.processes import this_host
from capsel.versioning import code_version


def new_run_id() -> str:
    """A fresh run id (uuid4 hex)."""
    return uuid.uuid4().hex


def start_run(
    con: duckdb.DuckDBPyConnection,
    kind: str,
    config: dict | None = None,
    model_fingerprint: str | None = None,
    parent_run_id: str | None = None,
    run_id: str | None = None,
    prefect_flow_run_id: str | None = None,
) -> str:
    """Insert a run row in state 'running', owned by this process, and return its id.

    Prefect tasks pass their flow run id in; the library itself never imports Prefect. The pid and host
    let a later writer tell a run whose process was killed from one still going.
    """
    run_id = run_id or new_run_id()
    run_sql(con, "runs/runs_start", {
        "run_id": run_id,
        "kind": kind,
        "prefect_flow_run_id": prefect_flow_run_id,
        "parent_run_id": parent_run_id,
        "code_version": code_version(),
        "config": orjson.dumps(config or {}).decode(),
        "model_fingerprint": model_fingerprint,
        "pid": os.getpid(),
        "host": this_host(),
    })
    return run_id


def finish_run(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    status: str,
    counters: dict | None = None,
    error: str | None = None,
) -> None:
    """Close a run with its final status, counters and error message; a run already closed keeps its outcome."""
    run_sql(con, "runs/runs_finish", {
        "run_id": run_id,
        "status": status,
        "counters": orjson.dumps(counters or {}).decode(),
        "error": error,
    })


@contextmanager
def recorded_run(
    con: duckdb.DuckDBPyConnection, kind: str, counters: dict, **start_kwargs: Any
) -> Iterator[str]:
    """Run a block as a recorded run: completed on success, interrupted on Ctrl-C, failed otherwise.

    `counters` is a dict the block fills in; its final state is stored with the run. A block may close the run
    itself, inside the transaction that commits its last work (ingest does), so a kill after that commit does
    not leave it 'running'; the close here then changes nothing.
    """
    run_id = start_run(con, kind, **start_kwargs)
    report_stage(kind, run_id)
    try:
        yield run_id
    except KeyboardInterrupt:
        finish_run(con, run_id, "interrupted", counters, "interrupted by user")
        raise
    except BaseException as exc:
        finish_run(con, run_id, "failed", counters, f"{type(exc).__name__}: {exc}")
        raise
    finish_run(con, run_id, "completed", counters)


def recorded_seconds(con: duckdb.DuckDBPyConnection) -> float:
    """Seconds of every finished top-level run in the database, summed (idle time between runs not counted)."""
    return float(one_row(con, "runs/runs_recorded_seconds")[0])
