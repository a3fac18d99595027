"""One replicate of the real-model SFT lab: a fresh pool drawn with its own seed, scored, each method's selection
published, fine-tuned and evaluated with the base model, and the paired deltas between them.

Every step is resumable: scores, published selections, finished models and stored evaluations are reused, and
a finished pool keeps its result in pool.json.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from capsel.cap_engine.config import ScoringConfig
from capsel.config import Settings
from capsel.db import open_db
from capsel.db.records import fetch_records
from capsel.evaluation.eval_files import stage_file, staging_folder
from capsel.evaluation.eval_spec import parse_eval_spec
from capsel.evaluation.options import EvalOptions
from capsel.evaluation.paired import compare, stored_rows
from capsel.evaluation.targets import BASE_PREFIX
from capsel.finetune.schedule import AUTO
from capsel.ingest.pipeline import IngestOptions
from capsel.methods.cap import CapSpec
from capsel.methods.ifd import IfdSpec
from capsel.methods.ppl import PplSpec
from capsel.methods.spec import ModelSpec
from capsel.runs import recorded_seconds
from capsel.selection.params import SelectionParams
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
from capsel_lab.real_sft.plan import (
    BASE,
    DELTAS,
    HELDOUT_FIELDS,
    LAB_RECIPE,
    NULL,
    POOL_RESULT,
    RECIPE_FILE,
    SCORED_MARK,
    SELECTIONS_FILE,
    PoolPlan,
    finished_result,
)
from capsel_lab.real_sft.pool import LabFiles, write_lab_files


def run_pool(plan: PoolPlan, folder: Path, settings: Settings, say: Callable[[str], None] = print) -> dict:
    """The pool's result (pool.json): every model's loss with its interval, what each selection holds, and the
    paired deltas between methods; a finished pool is read back, not run again, unless the plan asks for a model
    its result lacks."""
    finished = finished_result(folder, plan)
    if finished is not None:
        return finished
    folder.mkdir(parents=True, exist_ok=True)
    files = write_lab_files(folder, plan.n_pool, plan.n_heldout, plan.junk_share, plan.pool_seed)
    recipe = folder / RECIPE_FILE
    recipe.write_text("".join(f"{key}: {value}\n" for key, value in LAB_RECIPE.items()), encoding="utf-8")
    con = open_db(folder / "capsel.duckdb")
    try:
        ctx = RunContext(con, settings)
        _score_pool(ctx, plan, files, folder, say)
        selections = _publish_selections(ctx, plan, folder, say)
        targets, trained = _finetune_and_evaluate(ctx, plan, files, folder, recipe, selections, say)
        rows = stored_rows(con)
        metrics = {row["target"]: row for row in fetch_records(con, "evaluation/evaluations_list")
                   if row["domain"] == "*" and row["metric"] == "loss"}
    finally:
        con.close()
    result = pool_result(plan, selections, targets, metrics, rows, trained)
    (folder / POOL_RESULT).write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")
    return result


def pool_seconds(folder: Path) -> float:
    """The seconds a pool's recorded runs took (scoring, selections, fine-tunes, evaluation), summed from its
    database: a pool resumed over several lab runs counts its work, not the hours between them."""
    con = open_db(folder / "capsel.duckdb", read_only=True)
    try:
        return round(recorded_seconds(con), 1)
    finally:
        con.close()


def _score_pool(ctx: RunContext, plan: PoolPlan, files: LabFiles, folder: Path, say: Callable[[str], None]) -> None:
    if (folder / SCORED_MARK).is_file():
        return
    say(f"pool {plan.pool_seed}: ingesting {files.pool} and scoring it with {plan.model} (CAP, PPL from CAP's run, "
        f"then IFD)")
    model = ModelSpec(path=plan.model, prompt_format=plan.prompt_format)
    run_steps(SELECTION_STEPS, SelectionPlan(IngestRequest([str(files.pool)], IngestOptions()),
                                             ScoreRequest(CapSpec(model=model))), SelectionOutcome(), ctx)
    wanted = {entry["method"] for entry in plan.methods.values()}
    if "ppl" in wanted:
        score(ScoreRequest(PplSpec(model=model)), ctx)
    if "ifd" in wanted:
        score(ScoreRequest(IfdSpec(model=model)), ctx)
    (folder / SCORED_MARK).write_text("scored\n", encoding="utf-8")



def _publish_selections(ctx: RunContext, plan: PoolPlan, folder: Path, say: Callable[[str], None]) -> list[dict]:
    """Each selection, published once and reused by a rerun (selections.json remembers them)."""
    labels = pd.read_csv(folder / "pool" / "labels.csv").set_index("candidate_id")["lab_label"]
    remembered = folder / SELECTIONS_FILE
    known = json.loads(remembered.read_text()) if remembered.is_file() else {}
    selections = []
    for name, options, seed in plan.asked():
        key = f"{name}|{seed}"
        if key not in known or not (folder / "selections" / known[key]["selection_id"]).is_dir():
            request = SelectionParams(budget=plan.budget, seed=seed, **options)
            summary = select_and_publish(SelectRequest(request, folder / "selections"), ctx)
            members = summary.selection.members["candidate_id"]
            known[key] = {"method": name, "selection_seed": seed,
                          "selection_id": summary.published.selection_id, "n_members": len(members),
                          "n_junk": int(members.map(labels).eq("junk").sum()),
                          "response_tokens": _response_tokens(plan.model, Path(str(summary.published.path)))}
            remembered.write_text(json.dumps(known, indent=1), encoding="utf-8")
            say(f"pool {plan.pool_seed}: selected {name} (seed {seed}): {len(members)} rows, "
                f"{known[key]['n_junk']} junk, {known[key]['response_tokens']} response tokens")
        selections.append(known[key])
    return selections


def _response_tokens(model: str, published: Path) -> int:
    """Response tokens the selection trains on (the model's tokenizer, no special tokens): a row budget is not a
    token budget."""
    from capsel.models.loading import describe_model

    tokenizer = describe_model(model).tokenizer
    rows = [json.loads(line) for line in (published / "data.jsonl").read_text(encoding="utf-8").splitlines()]
    return sum(len(tokenizer(row["output"].strip(), add_special_tokens=False).input_ids) for row in rows)


def _finetune_and_evaluate(ctx: RunContext, plan: PoolPlan, files: LabFiles, folder: Path, recipe: Path,
                           selections: list[dict], say: Callable[[str], None]
                           ) -> tuple[dict[str, str], dict[str, dict]]:
    """Every selection fine-tuned (the training seed is the plan's, not the pool's) and evaluated with the base
    model; {selection id or base: target}, and each selection's training as its model's manifest records it."""
    staging = staging_folder(folder)
    evals = [parse_eval_spec(f"loss:{files.heldout}", staging)]
    if plan.n_gsm8k:
        evals.append(parse_eval_spec(f"gsm8k:{files.heldout}", staging))
    options = EvalOptions(fields=HELDOUT_FIELDS, scoring=ScoringConfig(prompt_format=plan.prompt_format),
                          fewshot_file=stage_file(files.demos, staging, "demonstrations")[0],
                          limit=plan.n_gsm8k or None)
    base = f"{BASE_PREFIX}{plan.model}"
    evaluation = EvaluationPlan(
        # epochs auto: a small budget trains as many epochs as it takes to make MIN_STEPS steps that learn
        [FinetuneStageRequest(entry["selection_id"], plan.model, folder, plan.profile, recipe, plan.train_seed,
                              plan.prompt_format, epochs=AUTO) for entry in selections],
        EvaluateRequest((base,), tuple(evals), folder, options))

    def call(declared: DeclaredStep, request: Any, ctx: RunContext) -> Any:
        say(f"pool {plan.pool_seed}: {declared.describe(request)}")
        return declared.step(request, ctx)

    outcome = run_steps(EVALUATION_STEPS, evaluation, EvaluationOutcome(), ctx, call)
    targets = {entry["selection_id"]: model.finetune_id for entry, model in zip(selections, outcome.finetuned)}
    trained = {entry["selection_id"]: training_record(model.manifest)
               for entry, model in zip(selections, outcome.finetuned)}
    return {**targets, BASE: base}, trained


def training_record(manifest: dict) -> dict:
    """A cell's training as its model's manifest records it: epochs, optimizer steps, the steps at a learning rate
    above zero and the loss at the last step (empty for a model made before capsel recorded them)."""
    planned, logged = manifest.get("schedule") or {}, manifest.get("trained") or {}
    return {key: value for key, value in (("epochs", planned.get("epochs")),
                                          ("optimizer_steps", planned.get("optimizer_steps")),
                                          ("learning_steps", planned.get("learning_steps")),
                                          ("final_train_loss", logged.get("final_loss"))) if value is not None}


def pool_result(plan: PoolPlan, selections: list[dict], targets: dict[str, str], metrics: dict[str, dict],
                rows: pd.DataFrame, trained: dict[str, dict] | None = None) -> dict:
    """Each model's loss (95% CI) and selection facts, and each of DELTAS as a paired comparison on this pool."""
    loss = rows[rows["metric"] == "loss"]
    models = []
    for entry in [*selections, {"method": BASE, "selection_id": BASE}]:
        stored = metrics[targets[entry["selection_id"]]]
        models.append({**entry, **(trained or {}).get(entry["selection_id"], {}),
                       "target": targets[entry["selection_id"]], "loss": stored["value"],
                       "loss_ci95": [stored["ci_low"], stored["ci_high"]], "n_heldout": stored["n"]})
    by_method = {entry["method"]: entry for entry in selections if entry["method"] != NULL}
    deltas = []
    for method, against in DELTAS:
        if method in by_method and against in by_method:
            for comparison in compare(loss, by_method[against]["selection_id"]):
                if comparison.target == by_method[method]["selection_id"] and comparison.domain == "*":
                    deltas.append({**comparison.as_dict(), "method": method, "against": against})
    return {"pool_seed": plan.pool_seed, "junk_share": plan.junk_share, "train_seed": plan.train_seed,
            "models": models, "deltas": deltas}
