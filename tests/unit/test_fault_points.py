"""Fault points: every listed point is placed in the code and nothing else is, and the named one kills the process."""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
from pathlib import Path

from capsel.faults import FAULT_POINT_ENV, FAULT_POINTS

REPO = Path(__file__).resolve().parents[2]
SOURCES = [REPO / "capsel", REPO / "flows", REPO / "tasks"]


def placed_points() -> list[tuple[str | None, str]]:
    """(name, file:line) of every fault_point(...) call in the shipped code; name None when not a literal."""
    placed = []
    for root in SOURCES:
        for path in sorted(root.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Call) and _names_fault_point(node.func):
                    first = node.args[0] if node.args else None
                    literal = isinstance(first, ast.Constant) and isinstance(first.value, str)
                    placed.append((first.value if literal else None, f"{path.relative_to(REPO)}:{node.lineno}"))
    return placed


def _names_fault_point(func: ast.expr) -> bool:
    return (isinstance(func, ast.Name) and func.id == "fault_point") or (
        isinstance(func, ast.Attribute) and func.attr == "fault_point")


def test_every_listed_point_is_placed_and_nothing_unlisted():
    placed = placed_points()
    # literal names only: a computed one would escape this check and the sweep
    assert [where for name, where in placed if name is None] == []
    unlisted = sorted({f"{name} at {where}" for name, where in placed if name not in FAULT_POINTS})
    assert unlisted == []
    assert sorted(set(FAULT_POINTS) - {name for name, _ in placed}) == []
    assert len(set(FAULT_POINTS)) == len(FAULT_POINTS)


def _run_past_two_points(armed: str | None) -> subprocess.CompletedProcess:
    script = ("from capsel.faults import fault_point\n"
              "fault_point('ingest.mid_chunk'); print('passed mid_chunk', flush=True)\n"
              "fault_point('publish.after_rename'); print('passed after_rename', flush=True)\n")
    env = {key: value for key, value in os.environ.items() if key != FAULT_POINT_ENV}
    if armed is not None:
        env[FAULT_POINT_ENV] = armed
    return subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)


def test_the_named_point_kills_by_sigkill_and_others_pass():
    killed = _run_past_two_points("publish.after_rename")
    assert killed.returncode == -signal.SIGKILL
    assert killed.stdout.splitlines() == ["passed mid_chunk"]

    unarmed = _run_past_two_points(None)
    assert unarmed.returncode == 0 and unarmed.stdout.splitlines() == ["passed mid_chunk", "passed after_rename"]
    elsewhere = _run_past_two_points("score.mid_batch")
    assert elsewhere.returncode == 0 and len(elsewhere.stdout.splitlines()) == 2
