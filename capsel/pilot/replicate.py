"""One replicate's work in its own store: its sub-pool ingested and scored by each method, every selection
published, every cell fine-tuned, every model and the base model evaluated on the held-out rows.

Each step is capsel's own stage, so each is reused on a rerun: the store knows what is scored, selections.json what
was published, a finished model folder what was trained, and a stored evaluation what was evaluated.
"""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path
from typing import Callable

import pandas as pd
from pydantic import TypeAdapter, ValidationError

from capsel.cap_engine.config import ScoringConfig
from capsel.db import open_db
from capsel.errors import CapselError
from capsel.evaluation.eval_files import stage_file, staging_folder
from capsel.evaluation.eval_spec import parse_eval_spec
from capsel.evaluation.options import EvalOptions
from capsel.evaluation.paired import stored_rows
from capsel.evaluation.targets import BASE_PREFIX
from capsel.ingest.pipeline import IngestOptions
from capsel.ingest.records import parse_field_map
from capsel.methods.registry import method
from capsel.methods.scorer_spec import ScorerSpec
from capsel.pilot.cells import Cell, Selected, asked
from capsel.pilot.spec import PilotSpec
from capsel.selection.params import SelectionParams
from capsel.selection.plan import build_selection
from capsel.stages.context import RunContext
from capsel.stages.evaluate import EvaluateRequest, evaluate
from capsel.stages.finetune import FinetuneStageRequest, finetune_selection
from capsel.stages.ingest import IngestRequest, ingest
from capsel.stages.score import ScoreRequest, score
from capsel.stages.select import SelectRequest, select_and_publish, selection_key

STORE, SELECTIONS_FILE = "capsel.duckdb", "selections.json"


class Replicate:
    """A replicate's folder and store: `with Replicate(...) as replicate:` holds its store open."""

    def __init__(self, spec: PilotSpec, folder: Path, settings, subpool: Path) -> None:
        self.spec, self.folder, self.settings, self.subpool = spec, folder, settings, subpool
        self.index = int(folder.name.rsplit("-", 1)[1])

    def __enter__(self) -> "Replicate":
        self.con = open_db(self.folder / STORE)
        self.ctx = RunContext(self.con, self.settings)
        return self

    def __exit__(self, *_: object) -> None:
        self.con.close()

    def scored(self) -> None:
        """The sub-pool ingested and scored by every method that scores (the control needs nothing)."""
        ingest(IngestRequest([str(self.subpool)], IngestOptions()), self.ctx)
        for name in self.spec.methods:
            spec = scorer_spec(name, self.spec.model, self.spec.prompt_format)
            if spec is not None:
                score(ScoreRequest(spec), self.ctx)

    def selections(self, tokens_of: Callable[[Path], int], tokens_in: Callable[[str], int]) -> list[Selected]:
        """Every selection of this replicate, published once and remembered in selections.json; `tokens_of` counts
        a published selection's response tokens, `tokens_in` one response's."""
        remembered = self.folder / SELECTIONS_FILE
        known = json.loads(remembered.read_text()) if remembered.is_file() else {}
        selected = []
        for budget, name, draw in asked(self.spec):
            key = f"{budget}|{name}|{draw}"
            if key not in known or not (self.folder / "selections" / known[key]["selection_id"]).is_dir():
                rows = self._rows_within(int(budget), name, draw, tokens_in) if self.spec.token_budget else budget
                params = SelectionParams(budget=str(rows), seed=draw, method=name)
                summary = select_and_publish(SelectRequest(params, self.folder / "selections"), self.ctx)
                published = Path(str(summary.published.path))
                known[key] = asdict(Selected(self.index, budget, name, draw, summary.published.selection_id,
                                             len(summary.selection.members), tokens_of(published)))
                remembered.write_text(json.dumps(known, indent=1) + "\n")
            selected.append(Selected(**known[key]))
        return selected

    def _rows_within(self, tokens: int, name: str, draw: int, tokens_in: Callable[[str], int]) -> int:
        """The most rows of `name`'s ranking (per domain, the top ones) whose responses hold at most `tokens`
        tokens in every domain (at least one)."""
        params = SelectionParams(budget="100%", seed=draw, method=name)
        ranked = build_selection(self.con, params, selection_key(self.ctx, SelectRequest(params, self.folder))).members
        fewest = None
        for _, members in ranked.groupby("domain", sort=True):
            spent, rows = 0, 0
            for response in members["response"]:
                spent += tokens_in(response)
                if spent > tokens:
                    break
                rows += 1
            fewest = rows if fewest is None else min(fewest, rows)
        return max(1, fewest or 0)

    def trained(self, cell: Cell, steps_config: Path, on_training: Callable) -> Cell:
        """The cell's model: trained for the budget's steps (steps_config), or the finished one reused."""
        request = FinetuneStageRequest(cell.selected.selection_id, self.spec.model, self.folder, self.spec.profile,
                                       steps_config, cell.seed, self.spec.prompt_format,
                                       min_steps=self.spec.min_steps)
        summary = finetune_selection(request, replace(self.ctx, on_training=on_training))
        return Cell(cell.selected, cell.seed, summary.finetune_id)

    def evaluated(self, cells: list[Cell], heldout: Path, on_count: Callable) -> pd.DataFrame:
        """Every cell's model and the base model on the held-out rows; their per-row outcomes, by target."""
        staging = staging_folder(self.folder)
        spec = parse_eval_spec(f"{self.spec.eval}:{heldout}", staging)
        fields = parse_field_map([self.spec.field_map] if self.spec.field_map and self.spec.heldout else [])
        fewshot = stage_file(Path(self.spec.fewshot), staging, "[[fewshot]]")[0] if self.spec.fewshot else None
        options = EvalOptions(fields=fields, domain=self.spec.domain if self.spec.heldout else None,
                              scoring=ScoringConfig(prompt_format=self.spec.prompt_format), fewshot_file=fewshot,
                              allow_code_execution=self.spec.allow_code_execution)
        targets = tuple(str(cell.finetune_id) for cell in cells) + (base_target(self.spec),)
        evaluate(EvaluateRequest(targets, (spec,), self.folder, options), replace(self.ctx, on_count=on_count))
        rows = stored_rows(self.con)
        return rows[rows["target"].isin(targets) & (rows["eval_kind"] == self.spec.eval)
                    & (rows["metric"] == self.spec.metric)]


def base_target(spec: PilotSpec) -> str:
    """The base model as `capsel evaluate` names it."""
    return f"{BASE_PREFIX}{spec.model}"


def scorer_spec(name: str, model: str, prompt_format: str) -> ScorerSpec | None:
    """The spec that scores `name` with the pilot's model, or None for a method that scores nothing (random)."""
    declared = method(name)
    if declared.spec is None:
        return None
    field = declared.model_field()
    values: dict = {"method": name}
    if field:
        values[field] = {"path": model, **({"prompt_format": prompt_format} if declared.reads_prompts() else {})}
    try:
        return TypeAdapter(ScorerSpec).validate_python(values)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'][1:]))}: {e['msg']}" for e in error.errors())
        raise CapselError(f"the pilot scores {name} with the model alone, and {name} needs more ({problems}); "
                          "leave it out of [[methods]]") from error
