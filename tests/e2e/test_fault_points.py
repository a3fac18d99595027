"""Kill -9 at every fault point of the CLI pipeline (capsel/faults.py), rerun: the store an uninterrupted run leaves.

The pipeline is ingest -> score -> select on 20 candidates and a tiny model, and `generate` beside score. A point
is swept on the command that reaches it, started from the uninterrupted run's store just before that command:
later commands read nothing but the store, so a store equal after the rerun stays equal to the end.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from capsel.db.progress_file import read_progress
from capsel.faults import FAULT_POINT_ENV, FAULT_POINTS
from tests.support.flow_pool import HORIZON, flow_config, tiny_flow_model, write_pool_file
from tests.support.store_state import duplicate_keys, selection_rows, store_state

pytestmark = pytest.mark.e2e

DB = "capsel.duckdb"
OUT = "sels"
# the command each point's prefix belongs to (publish runs inside select)
COMMAND_OF = {"ingest": "ingest", "score": "score", "select": "select", "publish": "select", "evaluate": "evaluate"}
ORDER = ("ingest", "score", "select", "evaluate")
# two domains: an evaluation stores three metric rows, so a kill can fall between two of them
HELDOUT = [{"instruction": f"question {i}", "response": f"answer number {i} here", "domain": "ab"[i % 2]}
           for i in range(6)]
# `capsel generate` (y-hat alone) commits its batches through the scoring loop, so it is killed at that loop's
# commit points too (score.mid_batch lies between CAP's two tables: y-hat alone never reaches it)
CLI_POINTS = [(point, COMMAND_OF[point.split(".")[0]]) for point in FAULT_POINTS if point.split(".")[0] in COMMAND_OF]
CLI_POINTS += [(point, "generate") for point in ("score.before_commit", "score.after_commit")]
# what the rerun's reconcile must say it repaired after a kill at each publish point (None: nothing to repair)
RECONCILE_SAYS = {
    "publish.after_staging": "the staging folder of a killed publish",
    "publish.before_record_commit": "the staging folder of a killed publish",
    "publish.after_record_commit": "undid publishing",
    "publish.after_rename": "finished publishing",
    "publish.before_commit": "finished publishing",
}


@dataclass(frozen=True)
class Reference:
    """The uninterrupted run: its inputs, its store before each command, and its final state."""

    pool: Path
    model: Path
    before: dict[str, Path]
    final: dict[str, list[tuple]]


def _args(command: str, reference_inputs: tuple[Path, Path]) -> list[str]:
    pool, model = reference_inputs
    scoring = ["--model", str(model), "--horizon", str(HORIZON), "--batch-size", "1", "--device", "cpu",
               "--threads", "1"]
    return {
        "ingest": ["ingest", str(pool)],
        "generate": ["generate", *scoring],
        "score": ["score", *scoring],
        "select": ["select", "--budget", "3", "--out", OUT],
        "evaluate": ["evaluate", f"base:{model}", "--eval", f"loss:{pool.parent / 'heldout.jsonl'}",
                     "--batch-size", "2", "--device", "cpu"],
    }[command] + ["--db", DB]


def _capsel(args: list[str], cwd: Path, fault: str | None = None) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith("CAPSEL_")}
    env.update(OMP_NUM_THREADS="1", COLUMNS="200", CAPSEL_OUTPUT_ROOT=str(cwd / "root"))
    if fault:
        env[FAULT_POINT_ENV] = fault
    return subprocess.run([sys.executable, "-m", "capsel", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=180)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Reference:
    inputs = tmp_path_factory.mktemp("inputs")
    pool, model = write_pool_file(inputs / "pool.jsonl", 10, seed=5), tiny_flow_model(inputs / "model")
    (inputs / "heldout.jsonl").write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in HELDOUT))
    run = tmp_path_factory.mktemp("reference")
    before = {}
    for command in ORDER:
        before[command] = inputs / f"before-{command}.duckdb"
        _copy_store(run / DB, before[command])
        done = _capsel(_args(command, (pool, model)), run)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    before["generate"] = before["score"]
    return Reference(pool, model, before, store_state(run / DB))


@dataclass(frozen=True)
class Swept:
    """One point's killed run and its rerun, in their own folder."""

    killed: subprocess.CompletedProcess
    rerun: subprocess.CompletedProcess
    cwd: Path


@pytest.fixture(scope="module")
def swept(request, reference, tmp_path_factory) -> dict[str, Swept]:
    """Kill and rerun at every point this session selected, two points at a time.

    The points share nothing but the read-only reference, and two at a time halves the sweep on two cores.
    """
    sweep_test = test_killed_at_point_then_rerun_ends_like_an_uninterrupted_run
    points = [(item.callspec.params["point"], item.callspec.params["command"]) for item in request.session.items
              if getattr(item, "function", None) is sweep_test]

    def sweep(point_and_command: tuple[str, str]) -> Swept:
        point, command = point_and_command
        cwd = tmp_path_factory.mktemp(f"{command}-{point.replace('.', '-')}")
        _copy_store(reference.before[command], cwd / DB)
        args = _args(command, (reference.pool, reference.model))
        killed = _capsel(args, cwd, fault=point)
        return Swept(killed, _capsel(args, cwd), cwd)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(points, pool.map(sweep, points)))


@pytest.mark.parametrize(("point", "command"), CLI_POINTS)
def test_killed_at_point_then_rerun_ends_like_an_uninterrupted_run(point, command, reference, swept):
    killed, rerun, cwd = swept[point, command].killed, swept[point, command].rerun, swept[point, command].cwd
    assert killed.returncode == -signal.SIGKILL, f"{point} never fired:\n{killed.stdout[-1500:]}{killed.stderr[-1500:]}"
    assert rerun.returncode == 0, rerun.stdout[-2000:] + rerun.stderr[-2000:]

    state = store_state(cwd / DB)
    if command == "generate":  # y-hat alone: the generations score made on the way, nothing else new
        expected = {**store_state(reference.before["score"]),
                    **{table: reference.final[table] for table in ("generations", "models", "scoring_configs")}}
    else:
        expected = store_state(_after(reference, command)) if command != ORDER[-1] else reference.final
    assert state == expected
    assert duplicate_keys(cwd / DB) == {}
    if command == "select":
        _assert_folders_agree_with_rows(cwd)
        said = RECONCILE_SAYS.get(point)
        if said is None:
            assert "reconcile:" not in rerun.stdout
        else:
            assert said in rerun.stdout


def _copy_store(source: Path, target: Path) -> None:
    for suffix in ("", ".wal"):  # a store a process left with its write-ahead log replays it on open
        if Path(f"{source}{suffix}").exists():
            shutil.copy(f"{source}{suffix}", f"{target}{suffix}")


def _after(reference: Reference, command: str) -> Path:
    return reference.before[ORDER[ORDER.index(command) + 1]]


def _assert_folders_agree_with_rows(cwd: Path) -> None:
    cwd = cwd.resolve()
    rows = selection_rows(cwd / DB)
    assert rows and {status for _, status, _ in rows} == {"published"}
    entries = sorted(path.name for path in (cwd / OUT).iterdir())
    assert not [name for name in entries if name.startswith(".tmp-")], entries
    assert [name for name in entries if name.startswith("sel-")] == [selection_id for selection_id, _, _ in rows]
    assert all(Path(out_dir) == cwd / OUT / selection_id for selection_id, _, out_dir in rows)
    assert "orphaned" not in entries


# Every point between the flow's stages (inside them, the stages are the library calls the CLI sweep above
# already kills at every point).
FLOW_SWEPT = [point for point in FAULT_POINTS if point.startswith("pipeline.")]
# the stage a flow's progress file names at each flow point
PROGRESS_STAGE_AT = {"pipeline.after_ingest": "ingest pool.jsonl", "pipeline.after_score": "score",
                     "pipeline.before_select": "residualize"}


def _flow(prefect_server, run: Path, reference: Reference, fault: str | None = None) -> subprocess.CompletedProcess:
    # the CLI pipeline's model, pool, batch and budget, so the flow must end in the CLI reference's state
    config = flow_config(run, reference.model, [str(reference.pool)], scoring={"batch_size": 1},
                         runner={"threads": 1}, selection={"budget": "3"})
    (run / "flow.json").write_bytes(orjson.dumps(config.record()))
    env = prefect_server.env(**({FAULT_POINT_ENV: fault} if fault else {}))
    return subprocess.run([sys.executable, "-m", "capsel", "flow", "select", "--config", str(run / "flow.json")],
                          cwd=run, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("point", FLOW_SWEPT)
def test_flow_killed_between_stages_then_rerun_ends_like_an_uninterrupted_run(point, prefect_server, reference,
                                                                              tmp_path):
    killed = _flow(prefect_server, tmp_path, reference, fault=point)
    assert killed.returncode == -signal.SIGKILL, killed.stdout[-1500:] + killed.stderr[-1500:]
    # what `capsel status` showed when the kill came: the flow by name, the stage it had reached, complete
    left = read_progress(tmp_path / "capsel.duckdb")
    assert left.command.startswith("flow capsel-select run "), left.command
    assert left.stage.startswith(PROGRESS_STAGE_AT[point]), left.stage
    assert left.total is None or left.done == left.total, left.summary()
    rerun = _flow(prefect_server, tmp_path, reference)
    assert rerun.returncode == 0, rerun.stdout[-2000:] + rerun.stderr[-2000:]

    db = tmp_path / "capsel.duckdb"
    assert store_state(db) == store_state(reference.before["evaluate"])  # the CLI's store once it has selected
    assert duplicate_keys(db) == {}
    rows = selection_rows(db)
    assert [status for _, status, _ in rows] == ["published"]
    published = tmp_path.resolve() / "out" / "selections"
    assert sorted(path.name for path in published.iterdir()) == [selection_id for selection_id, _, _ in rows]
