"""Flow: fine-tune each selection (per seed) with LlamaFactory → evaluate every model and the base → compare."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from prefect import flow
from prefect.logging import get_run_logger
from prefect.runtime import flow_run
from prefect.states import Failed, State

from capsel.config import load_settings
from capsel.db import open_db
from capsel.db.progress_file import name_job
from capsel.db.records import fetch_records
from capsel.errors import CapselError
from capsel.evaluation.flow_config import EvaluateFlowConfig, EvaluationParams, FinetuneParams
from capsel.evaluation.targets import BASE_PREFIX
from capsel.flows.artifacts import artifact_keys, publish_evaluation_artifacts
from capsel.flows.deployment_defaults import with_deployment_part
from capsel.flows.job_name import flow_job
from capsel.flows.stage_lineage import StageLineage
from capsel.flows.stage_progress import StageProgress
from capsel.runs import new_run_id, recorded_run
from capsel.stages.context import RunContext
from capsel.stages.evaluate import EvaluateRequest
from capsel.stages.finetune import FinetuneStageRequest
from capsel.stages.pipeline import EVALUATION_STEPS, DeclaredStep, EvaluationOutcome, EvaluationPlan, run_steps
from capsel.tasks.steps import step_task

# each declared step as a task of the flow
STEP_TASKS = {declared.name: step_task(declared.step, declared.name) for declared in EVALUATION_STEPS}


@flow(name="capsel-evaluate", log_prints=True)
def evaluate_flow(
    evaluation: EvaluationParams,
    selections: list[str] | None = None,
    finetune: FinetuneParams = FinetuneParams(),
    db_path: str | None = None,
) -> dict | State:
    """Fine-tune the selections (none named: the newest of each method and budget) and evaluate every model.

    One model per selection and seed, trained as its own task (sequentially: the flow process is the database's
    one writer), then every model and the base model evaluated; the artifacts compare the methods.

    Args:
        evaluation: loss:FILE, gsm8k:FILE or humaneval:FILE evaluations (files in the output root or incoming folder)
        selections: selection ids; none: the newest selection of each method and budget
        finetune: base model, training recipe (cpu-small or paper) and seeds
        db_path: DuckDB file (default: $CAPSEL_DB_PATH)
    """
    try:
        config = EvaluateFlowConfig(evaluation=with_deployment_part("evaluation", evaluation),
                                    selections=selections or [], finetune=with_deployment_part("finetune", finetune),
                                    db_path=db_path)
        return _run(config)
    except CapselError as error:
        get_run_logger().error("%s", error)
        return Failed(message=f"{type(error).__name__}: {error}", data=error)


def _run(config: EvaluateFlowConfig) -> dict:
    config.check_parameters(load_settings())  # before anything is read or written
    name_job(flow_job())
    settings = config.settings()
    keys = artifact_keys("evaluate", settings)
    specs, options, model = config.eval_specs(settings), config.options(settings), config.base_model(settings)
    counters: dict = {}
    con = open_db(settings.db_path, must_exist=True)
    try:
        with recorded_run(con, "flow", counters, config=config.model_dump(mode="json"), run_id=new_run_id(),
                          prefect_flow_run_id=flow_run.id) as run_id:
            ctx = RunContext(con, settings, parent_run_id=run_id, prefect_flow_run_id=flow_run.id)
            selections = config.selections or [row["selection_id"] for row in
                                                fetch_records(con, "evaluation/selections_newest_per_method")]
            if not selections:
                raise CapselError("no published selection to fine-tune: run the selection flow first, or name "
                                  "selections")
            progress = StageProgress(keys.key("progress"))
            lineage = StageLineage(settings)
            finetunes = [FinetuneStageRequest(selection_id, model, settings.output_root, config.finetune.profile,
                                              None, seed, config.finetune.prompt_format, config.finetune.epochs,
                                              config.finetune.min_steps)
                         for selection_id in selections for seed in config.finetune.seeds]
            base = (f"{BASE_PREFIX}{model}",) if config.evaluation.include_base else ()
            plan = EvaluationPlan(finetunes, EvaluateRequest(base, specs, settings.output_root, options))

            sent = {"finetune": lineage.finetuned, "evaluate": lineage.evaluated}

            def call(declared: DeclaredStep, request: Any, ctx: RunContext) -> Any:
                progress.stage(declared.describe(request))
                summary = STEP_TASKS[declared.name](request, ctx)
                sent[declared.name](ctx, request, summary)
                return summary

            watched = replace(ctx, on_training=progress.training, on_count=progress.counted)
            outcome = run_steps(EVALUATION_STEPS, plan, EvaluationOutcome(), watched, call)
            summary = outcome.evaluated
            assert summary is not None  # the evaluate step always runs
            finetuned = [tuned.finetune_id for tuned in outcome.finetuned]
            targets = finetuned + list(base)
            counters.update(selections=selections, finetunes=finetuned,
                            n_results=len(summary.results), n_reused=sum(r.reused for r in summary.results))
            publish_evaluation_artifacts(con, targets, keys)
    finally:
        con.close()
    return counters
