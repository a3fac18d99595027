"""`capsel pilot --quick` on the bundled demo model, as a user types it: the design end to end, every figure of
pilot.json recomputed from its per-row outcomes, and a pilot killed with SIGKILL in a fine-tune that resumes, trains
no cell twice and ends where an uninterrupted pilot ends."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from capsel.models import demo_model_path
from tests.integration.test_finetune_llamafactory import FOUND, LF_PYTHON
from tests.reference import naive_pilot

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.skipif(
    FOUND is None, reason=f"LlamaFactory's environment is missing ({LF_PYTHON}): run `make setup-llamafactory`")]
ROOT = Path(__file__).resolve().parents[2]
CELLS = 2 * (1 + 2)  # 2 sub-pools x (cap + 2 random draws) at one budget


def command(out: Path) -> list[str]:
    return [sys.executable, "-m", "capsel", "pilot", "my_pool.jsonl", "--model", str(demo_model_path()), "--map",
            "instruction=question,response=answer", "--domain", "math", "--quick", "--allow-dirty", "--out",
            str(out), "--json"]


def environment() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("CAPSEL_")}
    return {**env, "CAPSEL_TRAINER_PYTHON": str(LF_PYTHON), "CAPSEL_THREADS": "1", "COLUMNS": "200"}


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("pilot")
    shutil.copyfile(ROOT / "examples" / "my_pool.jsonl", folder / "my_pool.jsonl")
    return folder


@pytest.fixture(scope="module")
def uninterrupted(folder) -> dict:
    done = subprocess.run(command(folder / "whole"), cwd=folder, env=environment(), capture_output=True, text=True,
                          timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_the_quick_pilot_prints_its_decisions_cells_report_and_rows(uninterrupted, folder):
    assert set(uninterrupted) == {"ok", "decisions", "cells", "report", "rows"} and uninterrupted["ok"] is True
    [decision] = uninterrupted["decisions"]
    assert {"budget", "recommended", "verdict", "p", "p_adjusted", "p_floor", "evidence"} <= set(decision)
    assert decision["budget"] == "50%" and decision["p_floor"] == pytest.approx(2 / 2001)
    cells = uninterrupted["cells"]
    assert len(cells) == CELLS and {cell["method"] for cell in cells} == {"cap", "random"}
    assert all(cell["steps"] == cells[0]["steps"] and cell["tokens"] > 0 for cell in cells)
    assert {"cell", "replicate", "budget", "method", "draw", "metric", "value", "ci95", "n", "tokens",
            "steps"} <= set(cells[0])
    report = Path(uninterrupted["report"])
    assert report.is_file() and (report.parent / "budget_curve.png").is_file() and (report.parent / "forest.png").is_file()
    rows = pd.read_parquet(uninterrupted["rows"])
    assert list(rows.columns) == ["cell", "row", "nll", "tokens"] and len(rows) == (CELLS + 1) * 10


def test_every_figure_is_recomputed_from_the_per_row_outcomes(uninterrupted):
    rows = pd.read_parquet(uninterrupted["rows"])
    pilot = json.loads((Path(uninterrupted["rows"]).parent / "pilot.json").read_text())
    by_cell = {cell: group.sort_values("row") for cell, group in rows.groupby("cell")}
    for cell in pilot["cells"]:
        group = by_cell[cell["cell"]]
        assert cell["value"] == pytest.approx(naive_pilot.ratio(group["nll"].tolist(), group["tokens"].tolist()),
                                              rel=1e-12)
    [comparison] = pilot["comparisons"]
    pairs = []
    for entry in comparison["replicates"]:
        method = by_cell[f"r{entry['replicate']}|50%|cap|d0|s0"]
        reference = by_cell[entry["random_median_unit"] + "|s0"]
        draws = sorted(naive_pilot.ratio(by_cell[f"r{entry['replicate']}|50%|random|d{draw}|s0"]["nll"].tolist(),
                                         by_cell[f"r{entry['replicate']}|50%|random|d{draw}|s0"]["tokens"].tolist())
                       for draw in range(2))
        assert entry["random_median"] == pytest.approx(draws[0], rel=1e-12)  # of two, the lower middle
        pairs.append(([[value] for value in method["nll"]], [[value] for value in reference["nll"]],
                      method["tokens"].tolist()))
    low, high, p = naive_pilot.hierarchical(pairs, resamples=2000, seed=0)
    assert comparison["hierarchical"]["ci95"] == pytest.approx([low, high], abs=1e-12)
    assert comparison["hierarchical"]["p"] == pytest.approx(p) and comparison["p_adjusted"] == pytest.approx(p)


def _training(out: Path) -> bool:
    return any(log.stat().st_size > 0 for log in out.glob("replicate-*/models/.tmp-ft-*/train.log"))


def test_a_pilot_killed_in_a_fine_tune_resumes_trains_no_cell_twice_and_ends_as_the_uninterrupted_one(
        uninterrupted, folder):
    out = folder / "killed"
    started = subprocess.Popen(command(out), cwd=folder, env=environment(), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 900
    while not (_training(out) and len(list(out.glob("replicate-*/models/ft-*"))) >= 1):
        assert started.poll() is None and time.monotonic() < deadline, "the pilot never reached its second fine-tune"
        time.sleep(0.2)
    os.killpg(started.pid, signal.SIGKILL)
    started.wait()
    done = subprocess.run(command(out), cwd=folder, env=environment(), capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    resumed = json.loads(done.stdout)
    trained = 0
    for store in out.glob("replicate-*/capsel.duckdb"):
        con = duckdb.connect(str(store), read_only=True)
        trained += con.execute("select count(*) from runs where kind = 'finetune' and status = 'completed'").fetchone()[0]
        con.close()
    models = list(out.glob("replicate-*/models/ft-*"))
    assert trained == len(models) == CELLS  # each cell trained once: the killed one again, none of the others
    ours = {cell["cell"]: cell["value"] for cell in resumed["cells"]}
    theirs = {cell["cell"]: cell["value"] for cell in uninterrupted["cells"]}
    assert ours == pytest.approx(theirs, rel=1e-9)
    assert resumed["decisions"][0]["p"] == pytest.approx(uninterrupted["decisions"][0]["p"])


QUICK_AS_OPTIONS = ["--methods", "cap", "--budgets", "50%", "--replicates", "2", "--random-draws", "2",
                    "--heldout-rows", "10", "--min-steps", "2", "--map", "instruction=question,response=answer",
                    "--domain", "math", "--allow-dirty"]


def flow_environment(folder: Path) -> dict[str, str]:
    return {**environment(), "CAPSEL_OUTPUT_ROOT": str(folder), "CAPSEL_MODEL": str(demo_model_path())}


def _decided(decisions: list[dict]) -> list[dict]:
    """The decisions without what one more replicate would cost, which the resuming run's own seconds add to."""
    return [{**{key: value for key, value in decision.items() if key != "one_more_replicate_s"},
             "verdict": decision["verdict"].split(" (one more replicate")[0]} for decision in decisions]


def test_the_pilot_flow_resumes_the_same_design_and_decides_as_the_command(uninterrupted, folder):
    from capsel.pilot.run import pilot_id
    from capsel.pilot.spec import QUICK, PilotSpec

    spec = PilotSpec(pool=str(folder / "my_pool.jsonl"), model=str(demo_model_path()), allow_dirty=True,
                     field_map="instruction=question,response=answer", domain="math", **QUICK)
    shutil.copytree(folder / "whole", folder / "pilots" / pilot_id(spec))  # what the command already ran
    models = sorted(path.name for path in (folder / "pilots").glob("*/replicate-*/models/ft-*"))
    done = subprocess.run([sys.executable, "-m", "capsel", "flow", "pilot", "my_pool.jsonl", "--model",
                           str(demo_model_path()), *QUICK_AS_OPTIONS], cwd=folder, env=flow_environment(folder),
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    printed = json.loads(done.stdout[done.stdout.index("{"):])
    assert _decided(printed["decisions"]) == _decided(uninterrupted["decisions"])
    # the cost of one more replicate counts the whole pilot's work, the flow's own few seconds included
    [flow_cost], [command_cost] = ([decision["one_more_replicate_s"] for decision in found]
                                   for found in (printed["decisions"], uninterrupted["decisions"]))
    assert command_cost <= flow_cost < command_cost + 60
    # nothing trained again
    assert sorted(path.name for path in (folder / "pilots").glob("*/replicate-*/models/ft-*")) == models


def test_a_pilot_flow_with_a_pool_outside_the_allowed_folders_writes_nothing(folder, tmp_path):
    outside = tmp_path / "elsewhere.jsonl"
    shutil.copyfile(folder / "my_pool.jsonl", outside)
    before = sorted(path.name for path in folder.iterdir())
    done = subprocess.run([sys.executable, "-m", "capsel", "flow", "pilot", str(outside), "--model",
                           str(demo_model_path()), *QUICK_AS_OPTIONS], cwd=folder, env=flow_environment(folder),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "outside the output root and the incoming folder" in " ".join(done.stderr.split())
    assert sorted(path.name for path in folder.iterdir()) == before
