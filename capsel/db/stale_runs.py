"""Runs left 'running' by processes of this host that are gone: a writer opening the store marks them 'interrupted'.

Only this host's pids can be checked, so a run of another host (a store on shared disk) is never touched.
"""

from __future__ import annotations

import logging

import duckdb

from capsel.db.sqlfiles import run_sql
from capsel.processes import pid_alive, this_host

logger = logging.getLogger(__name__)


def interrupt_dead_runs(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Mark this host's 'running' runs whose process is dead as 'interrupted'; returns their ids."""
    running = run_sql(con, "runs/runs_running_here", {"host": this_host()}).fetchall()
    dead = [run_id for run_id, pid in running if not pid_alive(pid)]
    if dead:
        run_sql(con, "runs/runs_mark_interrupted", {"run_ids": dead})
        # Logged, not printed: the library has no console, and the CLI shows warnings on stderr.
        runs = "1 run of a dead process" if len(dead) == 1 else f"{len(dead)} runs of dead processes"
        logger.warning("marked %s as interrupted", runs)
    return dead
