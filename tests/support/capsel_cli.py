"""`capsel` as a user types it, in a process of its own, and what a failure must look like: one `error:` line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

import duckdb

DB = "capsel.duckdb"


def capsel_env(cwd: Path, **extra: str) -> dict:
    """os.environ without CAPSEL_* settings, the database in `cwd`, a terminal wide enough that no line wraps."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("CAPSEL_")}
    return {**env, "CAPSEL_DB_PATH": str(cwd / DB), "CAPSEL_OUTPUT_ROOT": str(cwd / "out"), "COLUMNS": "1000",
            "OMP_NUM_THREADS": "1", **extra}


def run_capsel(cwd: Path, *args: str, env: dict | None = None, preexec_fn: Callable[[], None] | None = None,
               timeout: float = 180) -> subprocess.CompletedProcess:
    """`capsel ARGS` in `cwd` (with `capsel_env(cwd)` unless `env` is given)."""
    return subprocess.run([sys.executable, "-m", "capsel", *args], cwd=cwd, env=env or capsel_env(cwd),
                          capture_output=True, text=True, timeout=timeout, preexec_fn=preexec_fn)


def one_line_error(done: subprocess.CompletedProcess, code: int) -> str:
    """The failure's single `error:` line, after checking the exit code and that nothing else was printed."""
    assert done.returncode == code, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


def query(cwd: Path, sql: str) -> list[tuple]:
    """Rows of `sql` on the database in `cwd`, opened read-only."""
    con = duckdb.connect(str(cwd / DB), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()
