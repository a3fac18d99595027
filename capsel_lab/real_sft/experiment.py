"""The real-model SFT comparison, through capsel's own stages: ingest, score, select and publish each method's
selection, fine-tune each with LlamaFactory for every seed, evaluate every model and the base model.

Every step is resumable: scores, published selections, finished models and stored evaluations are reused.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from capsel.cap_engine.config import ScoringConfig
from capsel.config import Settings
from capsel.db import open_db
from capsel.evaluation.eval_spec import parse_eval_spec
from capsel.evaluation.options import EvalOptions
from capsel.evaluation.targets import BASE_PREFIX
from capsel.ingest.pipeline import IngestOptions
from capsel.ingest.records import FieldMap
from capsel.methods.cap import CapSpec
from capsel.methods.ifd import IfdSpec
from capsel.methods.ppl import PplSpec
from capsel.methods.spec import ModelSpec
from capsel.selection.budget import parse_budget
from capsel.selection.plan import SelectionRequest
from capsel.stages.context import RunContext
from capsel.stages.evaluate import EvaluateRequest
from capsel.stages.finetune import FinetuneStageRequest
from capsel.stages.ingest import IngestRequest
from capsel.stages.pipeline import (
    EVALUATION_STEPS,
    SELECTION_STEPS,
    DeclaredStep,
    EvaluationOutcome,
    EvaluationPlan,
    SelectionOutcome,
    SelectionPlan,
    run_steps,
)
from capsel.stages.score import ScoreRequest, score
from capsel.stages.select import SelectRequest, select_and_publish
from capsel_lab.real_sft.pool import LabFiles, write_lab_files

SUMMARY_FILE, SELECTIONS_FILE = "real_sft.json", "selections.json"
FULL_POOL, BASE = "full pool", "base model"
# each method of the table: what `capsel select` is asked for (random and the full pool draw per seed)
METHODS: dict[str, dict] = {
    "cap": {"method": "cap"},
    "cap, PPL guard 95th pct": {"method": "cap", "ppl_guard": 95.0},
    "cap, robust PPL guard z 3.5": {"method": "cap", "ppl_guard_z": 3.5},
    "random": {"method": "random"},
    "ppl": {"method": "ppl"},
    "ifd": {"method": "ifd"},
}
SEEDED = ("random",)
HELDOUT_FIELDS = FieldMap(instruction=("question",), response=("answer",))
# Over the cpu-small profile: a 10% selection of a 200-row pool is ~20 rows, which the profile's effective batch
# of 8 turns into 2 optimizer steps; 2 rows a step give every selection ten times its row count in steps.
LAB_RECIPE = {"gradient_accumulation_steps": 2}
RECIPE_FILE = "lab_recipe.yaml"


@dataclass(frozen=True)
class RealSftSpec:
    """The pool, the held-out rows, the budget, the seeds and the training profile of the real-model lab."""

    model: str
    n_pool: int = 200
    n_heldout: int = 100
    junk_share: float = 0.05
    pool_seed: int = 0
    budget: str = "10%"
    seeds: tuple[int, ...] = (0, 1, 2)
    profile: str = "cpu-small"
    prompt_format: str = "auto"
    n_gsm8k: int = 0            # held-out questions also run through lm-eval's GSM8K (0: loss only)
    methods: tuple[str, ...] = tuple(METHODS)
    late: str | None = None     # one more row: CAP with D_late re-averaged over these blocks (`select --late`)

    def method_options(self) -> dict[str, dict]:
        """Each method of this run's table and what `capsel select` is asked for."""
        chosen = {name: METHODS[name] for name in self.methods}
        return {**chosen, f"cap, late {self.late}": {"method": "cap", "late": self.late}} if self.late else chosen


@dataclass
class RealSftResult:
    """Every model's row, the table (mean ± std over seeds per method) and the wall time."""

    runs: list[dict] = field(default_factory=list)
    table: list[dict] = field(default_factory=list)
    wall_s: float = 0.0
    path: Path | None = None


def run_real_sft(spec: RealSftSpec, out_dir: Path, settings: Settings,
                 say: Callable[[str], None] = print) -> RealSftResult:
    """Build and score the pool, select with each method, fine-tune each selection per seed, evaluate them all."""
    started = time.monotonic()
    out_dir.mkdir(parents=True, exist_ok=True)
    files = write_lab_files(out_dir, spec.n_pool, spec.n_heldout, spec.junk_share, spec.pool_seed)
    recipe = out_dir / RECIPE_FILE
    recipe.write_text("".join(f"{key}: {value}\n" for key, value in LAB_RECIPE.items()), encoding="utf-8")
    con = open_db(out_dir / "capsel.duckdb")
    try:
        ctx = RunContext(con, settings)
        _score_pool(ctx, spec, files, say)
        selections = _publish_selections(ctx, spec, out_dir, say)
        runs = [{"method": method, "seed": seed, **selection} for (method, seed), selection in selections.items()]
        plan = EvaluationPlan(
            [FinetuneStageRequest(run["selection_id"], spec.model, out_dir, spec.profile, recipe, run["seed"],
                                  spec.prompt_format) for run in runs],
            EvaluateRequest((f"{BASE_PREFIX}{spec.model}",), _evals(spec, files), out_dir, _eval_options(spec, files)))

        def call(declared: DeclaredStep, request: Any, ctx: RunContext) -> Any:
            say(declared.describe(request))
            return declared.step(request, ctx)

        outcome = run_steps(EVALUATION_STEPS, plan, EvaluationOutcome(), ctx, call)
        for run, model in zip(runs, outcome.finetuned):
            run.update(target=model.finetune_id, train_seconds=model.manifest.get("train_seconds"))
        runs.append({"method": BASE, "seed": None, "target": f"{BASE_PREFIX}{spec.model}"})
        assert outcome.evaluated is not None  # the evaluate step always runs
        results = outcome.evaluated.results
    finally:
        con.close()
    metrics = {(r.target, r.eval.split(":")[0], r.metric): r.value for r in results if r.domain == "*"}
    for run in runs:
        run.update({f"{kind}:{metric}": value for (target, kind, metric), value in metrics.items()
                    if target == run["target"]})
    result = RealSftResult(runs, summarise(runs), time.monotonic() - started)
    result.path = out_dir / SUMMARY_FILE
    summary = {"spec": asdict(spec), "recipe_overrides": LAB_RECIPE, "wall_s": result.wall_s, "table": result.table,
               "runs": runs}
    result.path.write_text(json.dumps(summary, indent=1, default=str), encoding="utf-8")
    return result


def _score_pool(ctx: RunContext, spec: RealSftSpec, files: LabFiles, say: Callable[[str], None]) -> None:
    say(f"ingesting {files.pool} and scoring it with {spec.model} (CAP, then PPL from CAP's run, then IFD)")
    model = ModelSpec(path=spec.model, prompt_format=spec.prompt_format)
    # the selection pipeline through CAP's scoring; the baselines then score the same pool
    run_steps(SELECTION_STEPS, SelectionPlan(IngestRequest([str(files.pool)], IngestOptions()),
                                             ScoreRequest(CapSpec(model=model))), SelectionOutcome(), ctx)
    wanted = {entry["method"] for entry in spec.method_options().values()}
    if "ppl" in wanted:
        score(ScoreRequest(PplSpec(model=model)), ctx)
    if "ifd" in wanted:
        score(ScoreRequest(IfdSpec(model=model)), ctx)


def _publish_selections(ctx: RunContext, spec: RealSftSpec, out_dir: Path,
                        say: Callable[[str], None]) -> dict[tuple[str, int], dict]:
    """Each method's selection (random and the full pool: one per seed), published once and reused by a rerun
    (selections.json in the lab folder remembers them)."""
    labels = _labels(out_dir)
    remembered = out_dir / SELECTIONS_FILE
    known = json.loads(remembered.read_text()) if remembered.is_file() else {}
    selections: dict[tuple[str, int], dict] = {}
    asked = [(name, options, spec.budget) for name, options in spec.method_options().items()]
    asked.append((FULL_POOL, {"method": "random"}, "100%"))
    for name, options, budget in asked:
        for seed in spec.seeds:
            draws_per_seed = name in SEEDED or name == FULL_POOL
            request = SelectionRequest(parse_budget(budget, "per_domain"), seed=seed if draws_per_seed else 0,
                                       **options)
            if not draws_per_seed and seed != spec.seeds[0]:
                selections[(name, seed)] = selections[(name, spec.seeds[0])]
                continue
            key = f"{name}|{budget}|{request.seed}"
            if key in known and (out_dir / "selections" / known[key]["selection_id"]).is_dir():
                selections[(name, seed)] = known[key]
                continue
            summary = select_and_publish(SelectRequest(request, out_dir / "selections"), ctx)
            members = summary.selection.members["candidate_id"]
            selections[(name, seed)] = {"selection_id": summary.published.selection_id, "n_members": len(members),
                                        "n_junk": int(members.map(labels).eq("junk").sum())}
            known[key] = selections[(name, seed)]
            remembered.write_text(json.dumps(known, indent=1), encoding="utf-8")
            say(f"selected {name} (seed {request.seed}): {len(members)} members, "
                f"{selections[(name, seed)]['n_junk']} junk")
    return selections


def _labels(out_dir: Path) -> pd.Series:
    return pd.read_csv(out_dir / "pool" / "labels.csv").set_index("candidate_id")["lab_label"]


def _evals(spec: RealSftSpec, files: LabFiles) -> tuple:
    evals = [parse_eval_spec(f"loss:{files.heldout}")]
    if spec.n_gsm8k:
        evals.append(parse_eval_spec(f"gsm8k:{files.heldout}"))
    return tuple(evals)


def _eval_options(spec: RealSftSpec, files: LabFiles) -> EvalOptions:
    return EvalOptions(fields=HELDOUT_FIELDS, scoring=ScoringConfig(prompt_format=spec.prompt_format),
                       fewshot_file=files.demos, limit=spec.n_gsm8k or None)


def summarise(runs: list[dict]) -> list[dict]:
    """Mean, sample std and count over seeds of each metric, per method, in the order the methods ran."""
    frame = pd.DataFrame(runs)
    metrics = [column for column in frame.columns if ":" in column]
    table = []
    for method, rows in frame.groupby("method", sort=False):
        entry: dict = {"method": method, "n_seeds": len(rows), "n_members": rows.get("n_members", pd.Series()).mean(),
                       "n_junk": rows.get("n_junk", pd.Series()).mean()}
        for metric in metrics:
            values = rows[metric].dropna()
            entry[metric] = {"mean": float(values.mean()) if len(values) else None,
                             "std": float(values.std(ddof=1)) if len(values) > 1 else 0.0}
        table.append(entry)
    return table


