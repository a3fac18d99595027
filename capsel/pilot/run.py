"""Run (or resume) a pilot: draw, score, select, fine-tune and evaluate every cell, then the evidence and the report.

Every stage is capsel's own, each reused on a rerun, so a pilot killed at any point resumes where it stopped and
trains no cell twice. pilot.json holds every cell, comparison and decision; rows.parquet every per-row outcome
behind them; report/ the figures and the page.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from capsel.errors import CapselError
from capsel.models.loading import describe_model
from capsel.pilot.cells import Cell, Selected
from capsel.pilot.design import draw
from capsel.pilot.estimate import estimate
from capsel.pilot.provenance import provenance
from capsel.pilot.replicate import Replicate, base_target
from capsel.pilot.report import write_report
from capsel.pilot.spec import CONTROL, PilotSpec
from capsel.pilot.statistics import cell_values, compare_with_random, decisions, units
from capsel.pilot.steps import budget_steps
from capsel.selection.budget import parse_budget
from capsel.versioning import config_hash

PILOT_FILE, ROWS_FILE, SPEC_FILE, REPORT = "pilot.json", "rows.parquet", "spec.json", "report"
SECONDS_FILE, CODE_FILE = "seconds.json", "code.json"
BASE = "base"


@dataclass
class PilotEvents:
    """What a door shows while a pilot runs: lines, the cells done of all, a fine-tune's steps, evaluated rows."""

    say: Callable[[str], None] = print
    on_cells: Callable[[int, int], None] = lambda done, total: None
    on_training: Callable[[int, int, float | None, float | None], None] = lambda *_: None
    on_count: Callable[..., None] = lambda *_: None
    seconds: dict[str, float] = field(default_factory=dict)
    record: Path | None = None  # where every run's seconds add up, so a resumed pilot counts its whole work

    def timed(self, phase: str, started: float) -> None:
        self.seconds[phase] = round(self.seconds.get(phase, 0.0) + time.monotonic() - started, 1)
        if self.record is not None:
            self.record.write_text(json.dumps(self.seconds) + "\n")

    def resume(self, record: Path) -> None:
        """Count from what earlier runs of this pilot recorded in `record`."""
        self.record = record
        if record.is_file():
            self.seconds = json.loads(record.read_text())


def pilot_id(spec: PilotSpec) -> str:
    """`pilot-` and the hash of the design (the leave to run dirty code is no part of it)."""
    return "pilot-" + config_hash(spec.model_dump(mode="json", exclude={"allow_dirty"}))


def run_pilot(spec: PilotSpec, folder: Path, settings, events: PilotEvents | None = None) -> dict:
    """The pilot's result (also written to `folder`/pilot.json), running what is not done yet."""
    events = events or PilotEvents()
    code = provenance(spec.allow_dirty)
    _claim(folder, spec)
    code = _runs_code(folder / CODE_FILE, code)
    events.resume(folder / SECONDS_FILE)
    design = draw(spec, folder, settings)
    info = describe_model(spec.model)
    predicted = estimate(spec, design, info.source.local_dir)
    events.say(f"{spec.replicates} sub-pools of {design.subpool_rows} rows, {design.n_heldout} held out; "
               f"estimated {predicted['total_s'] / 60:.0f} min (scoring {predicted['scoring_s'] / 60:.0f}, "
               f"fine-tuning {predicted['training_s'] / 60:.0f}, evaluation {predicted['evaluation_s'] / 60:.0f}) "
               "from rates measured on 2 cores")
    replicates = [Replicate(spec, folder / f"replicate-{index}", settings, design.subpool(index))
                  for index in range(spec.replicates)]
    started = time.monotonic()
    for replicate in replicates:
        events.say(f"replicate {replicate.index}: ingesting and scoring {design.subpool_rows} rows")
        with replicate:
            replicate.scored()
    events.timed("scoring", started)
    tokenizer = info.tokenizer
    selections: list[Selected] = []
    for replicate in replicates:
        with replicate:
            selections += replicate.selections(lambda published: _response_tokens(tokenizer, published),
                                               lambda response: _tokens(tokenizer, response))
    steps = budget_steps(spec, selections, folder)
    planned = estimate(spec, design, info.source.local_dir, {b: s.steps for b, s in steps.items()})
    events.say("before the first fine-tune: " + "; ".join(
        f"{budget} trains {entry.steps} steps ({entry.learning_steps} that learn, {entry.fewest_rows}-"
        f"{entry.most_rows} rows)" for budget, entry in steps.items())
        + f"; fine-tuning and evaluation estimated at {(planned['training_s'] + planned['evaluation_s']) / 60:.0f} min")
    cells = [Cell(selected, seed) for selected in selections for seed in range(spec.train_seeds)]
    finished: list[Cell] = []
    rows = []
    for replicate in replicates:
        with replicate:
            started, trained = time.monotonic(), []
            for cell in (cell for cell in cells if cell.selected.replicate == replicate.index):
                trained.append(replicate.trained(cell, steps[cell.selected.budget].config, events.on_training))
                events.on_cells(len(finished) + len(trained), len(cells))
            events.timed("training", started)
            started = time.monotonic()
            evaluated = replicate.evaluated(trained, Path(design.heldout), events.on_count)
            events.timed("evaluation", started)
        rows.append(_named_rows(evaluated, trained, base_target(spec), replicate.index))
        finished += trained
    return _result(spec, folder, code, design, finished, steps, pd.concat(rows, ignore_index=True),
                     {"predicted": predicted, "planned_before_training": planned,
                      "actual": {**events.seconds, "total_s": round(sum(events.seconds.values()), 1)}})


def _claim(folder: Path, spec: PilotSpec) -> None:
    """The folder holds this pilot's design, or none yet: another pilot's folder is refused."""
    folder.mkdir(parents=True, exist_ok=True)
    recorded = folder / SPEC_FILE
    mine = spec.model_dump(mode="json", exclude={"allow_dirty"})
    if recorded.is_file() and json.loads(recorded.read_text()) != mine:
        raise CapselError(f"{folder} holds another pilot ({recorded}); give the pilot a folder of its own")
    recorded.write_text(json.dumps(mine, indent=1) + "\n")


def _runs_code(record: Path, now: dict) -> dict:
    """This run's code, and every earlier run's of the same pilot (a resumed pilot's cells may come from several
    commits): the last run's provenance, with `runs` listing each one's."""
    earlier = json.loads(record.read_text()) if record.is_file() else []
    runs = earlier if earlier and earlier[-1] == now else [*earlier, now]
    record.write_text(json.dumps(runs, indent=1) + "\n")
    return {**now, "runs": runs}


def _costed(found: list[dict], seconds_per_replicate: float) -> list[dict]:
    """Each decision that names no method, with what one more replicate would cost (this pilot's own pace)."""
    for decision in found:
        if decision["recommended"] is None:
            decision["one_more_replicate_s"] = round(seconds_per_replicate, 1)
            decision["verdict"] += f" (one more replicate: about {seconds_per_replicate / 60:.0f} min here)"
    return found


def _tokens(tokenizer, response: str) -> int:
    """A response's tokens as the trainer sees them (the model's tokenizer, no special tokens)."""
    return len(tokenizer(response.strip(), add_special_tokens=False).input_ids)


def _response_tokens(tokenizer, published: Path) -> int:
    """Response tokens a selection trains on: rows are not tokens."""
    with open(published / "data.jsonl", encoding="utf-8") as handle:
        return sum(_tokens(tokenizer, json.loads(line)["output"]) for line in handle if line.strip())


def _named_rows(evaluated: pd.DataFrame, cells: list[Cell], base: str, replicate: int) -> pd.DataFrame:
    """A replicate's per-row outcomes, each named by its cell (the base model once, from replicate 0)."""
    names = {str(cell.finetune_id): cell.name for cell in cells}
    if replicate == 0:
        names[base] = BASE
    kept = evaluated[evaluated["target"].isin(names)]
    return pd.DataFrame({"cell": kept["target"].map(names), "row": kept["row_index"].astype("int64"),
                         "outcome": kept["outcome"].astype("float64"), "weight": kept["weight"].astype("float64")})


def _result(spec: PilotSpec, folder: Path, code: dict, design, cells: list[Cell], steps, rows: pd.DataFrame,
            seconds: dict) -> dict:
    """pilot.json's content; the per-row outcomes and the report are written beside it."""
    model_rows = rows[rows["cell"] != BASE].copy()
    model_rows["unit"] = model_rows["cell"].str.rsplit("|", n=1).str[0]
    model_rows["seed"] = model_rows["cell"].str.rsplit("|s", n=1).str[1].astype(int)
    found = units(model_rows)
    comparisons = compare_with_random(found, spec.replicates, spec.budgets, spec.compared, CONTROL,
                                      spec.random_draws, spec.lower_is_better)
    values = cell_values(rows)
    metric = spec.metric
    cell_table = [{"cell": cell.name, "replicate": cell.selected.replicate, "budget": cell.selected.budget,
                   "method": cell.selected.method, "draw": cell.selected.draw, "seed": cell.seed, "metric": metric,
                   **values[cell.name], "tokens": cell.selected.response_tokens, "rows": cell.selected.n_rows,
                   "steps": steps[cell.selected.budget].steps, "selection_id": cell.selected.selection_id,
                   "finetune_id": cell.finetune_id} for cell in cells]
    base = {"cell": BASE, "metric": metric, **values[BASE]}
    rows_path = folder / ROWS_FILE
    named = {"outcome": "nll", "weight": "tokens"} if spec.eval == "loss" else {"outcome": "correct"}
    rows.rename(columns=named)[["cell", "row", *named.values()]].to_parquet(rows_path, compression="zstd",
                                                                          index=False)
    result = {
        "ok": True, "pilot_id": pilot_id(spec), "spec": spec.model_dump(mode="json"), "provenance": code,
        "design": {"n_pool": design.n_pool, "n_quarantined": design.n_quarantined,
                   "n_duplicates": design.n_duplicates, "subpool_rows": design.subpool_rows,
                   "n_heldout": design.n_heldout, "heldout": design.heldout},
        "metric": metric, "budget_steps": {b: {"steps": s.steps, "learning_steps": s.learning_steps,
                                                "rows": [s.fewest_rows, s.most_rows]} for b, s in steps.items()},
        "lower_is_better": spec.lower_is_better,
        "estimate": seconds, "decisions": _costed(decisions(comparisons, lower_is_better=spec.lower_is_better),
                                                  seconds["actual"]["total_s"] / spec.replicates),
        "comparisons": comparisons, "cells": cell_table, "base": base, "rows": str(rows_path),
    }
    budget_rows = {budget: int(budget) if spec.token_budget else parse_budget(budget).of(design.subpool_rows)
                   for budget in spec.budgets}
    result["report"] = str(write_report(folder / REPORT, result, budget_rows,
                                        "response tokens per sub-pool (budget)" if spec.token_budget
                                        else "rows selected per sub-pool (budget)"))
    (folder / PILOT_FILE).write_text(json.dumps(result, indent=1, default=str) + "\n")
    return result
