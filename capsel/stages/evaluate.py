"""Stage: evaluate fine-tuned or base models on held-out loss and the harness's benchmarks; store every metric."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import orjson

from capsel.db import run_sql
from capsel.db.progress_file import report_progress, report_stage
from capsel.db.records import fetch_records
from capsel.db.transaction import transaction
from capsel.errors import OptionError
from capsel.evaluation.eval_spec import EvalSpec
from capsel.evaluation.options import EvalOptions
from capsel.evaluation.row_outcomes import MetricSummary, RowOutcome, summarise
from capsel.evaluation.targets import BASE_PREFIX, EvalTarget, base_target, finetune_target
from capsel.faults import fault_point
from capsel.models.loading import LoadedModel
from capsel.runs import recorded_run
from capsel.stages.context import RunContext
from capsel.versioning import code_version, config_hash


@dataclass(frozen=True)
class EvaluateRequest:
    """Targets (fine-tune ids, or base:MODEL) and evaluations; harness work goes under `work_root`."""

    targets: tuple[str, ...]
    evals: tuple[EvalSpec, ...]
    work_root: Path
    options: EvalOptions = EvalOptions()


@dataclass(frozen=True)
class EvalResult:
    """One stored metric of one evaluation of one target; `reused` when an earlier identical run answered it."""

    target: str
    eval: str
    domain: str
    metric: str
    value: float
    n: int
    tokens: int | None = None
    stderr: float | None = None
    harness_version: str | None = None
    reused: bool = False
    ci95: tuple[float, float] | None = None  # bootstrap over rows (capsel.evaluation.bootstrap)
    ci_resamples: int | None = None

    def as_dict(self) -> dict:
        """JSON-ready: the fields the interface promises (target, eval, metric, value, n, tokens, ci95) and the
        rest."""
        return {"target": self.target, "eval": self.eval, "domain": self.domain, "metric": self.metric,
                "value": self.value, "n": self.n, "tokens": self.tokens, "stderr": self.stderr,
                "ci95": list(self.ci95) if self.ci95 is not None else None, "ci_resamples": self.ci_resamples,
                "harness_version": self.harness_version, "reused": self.reused}


@dataclass
class EvaluateSummary:
    """Every metric of the request, in target then evaluation order, and the run that stored the new ones."""

    results: list[EvalResult] = field(default_factory=list)
    run_id: str | None = None


def resolve_target(ctx: RunContext, text: str, options: EvalOptions) -> EvalTarget:
    """`base:MODEL` or a recorded fine-tune id (a selection id is fine-tuned first, by the caller)."""
    if text.startswith(BASE_PREFIX):
        return base_target(text, text[len(BASE_PREFIX):], options.dtype, options.device)
    return finetune_target(ctx.con, text, options.dtype, options.device)


def refuse_code_execution(request: EvaluateRequest) -> None:
    """humaneval runs the model's code: without the caller's permission nothing of the request starts."""
    if any(spec.kind == "humaneval" for spec in request.evals) and not request.options.allow_code_execution:
        from capsel.evaluation.harness import refusal

        raise OptionError(refusal())


def evaluate(request: EvaluateRequest, ctx: RunContext) -> EvaluateSummary:
    """Evaluate each target on each evaluation; results already stored for the same weights, file and config are
    reused, the rest computed and stored in one 'evaluate' run (counts go to `ctx.on_count`, notices to
    `ctx.on_notice`)."""
    refuse_code_execution(request)
    targets = [resolve_target(ctx, text, request.options) for text in request.targets]
    summary = EvaluateSummary()
    counters: dict = {"computed": 0, "reused": 0}
    run_config = {"targets": list(request.targets), "evals": [spec.text for spec in request.evals],
                  "options": _options_record(request.options)}
    with recorded_run(ctx.con, "evaluate", counters, config=run_config, parent_run_id=ctx.parent_run_id,
                      prefect_flow_run_id=ctx.prefect_flow_run_id) as run_id:
        summary.run_id = run_id
        for target in targets:
            runner = _TargetRunner(target, request, ctx, run_id)
            for spec in request.evals:
                results = runner.results(spec)
                counters["reused" if results and results[0].reused else "computed"] += 1
                summary.results.extend(results)
            runner.close()
    return summary


def _options_record(options: EvalOptions) -> dict:
    return {"fields": options.fields.as_dict(), "domain": options.domain, "scoring": options.scoring.model_dump(),
            "fewshot_file": str(options.fewshot_file) if options.fewshot_file else None, "limit": options.limit,
            "max_new_tokens": options.max_new_tokens, "batch_size": options.batch_size}


class _TargetRunner:
    """The evaluations of one target: loads its weights once, for the loss evaluations that need them."""

    def __init__(self, target: EvalTarget, request: EvaluateRequest, ctx: RunContext, run_id: str) -> None:
        self.target, self.request, self.ctx, self.run_id = target, request, ctx, run_id
        self.on_progress, self.on_notice = ctx.on_count, ctx.on_notice
        self.loaded: LoadedModel | None = None

    def results(self, spec: EvalSpec) -> list[EvalResult]:
        options = self.request.options
        prompt_format = self._prompt_format() if spec.kind == "loss" else None
        eval_config = options.config(spec, prompt_format)
        key = {"model_fingerprint": self.target.model_fingerprint, "eval_kind": spec.kind,
               "eval_file_sha256": spec.sha256, "eval_config_hash": config_hash(eval_config)}
        stored = fetch_records(self.ctx.con, "evaluation/evaluations_of_weights", key)
        if stored:
            return [self._result(spec, row, reused=True) for row in stored]
        outcomes, rows = self._loss_rows(spec, prompt_format) if prompt_format else self._harness_rows(spec)
        stored_row = {**key, "target": self.target.label, "finetune_id": self.target.finetune_id,
                      "base_fingerprint": self.target.base_fingerprint, "eval_spec": spec.text,
                      "eval_config": orjson.dumps(eval_config).decode(), "run_id": self.run_id}
        store_evaluation(self.ctx.con, key, self.run_id, [{**stored_row, **row} for row in rows], outcomes)
        return [self._result(spec, row, reused=False) for row in rows]

    def _result(self, spec: EvalSpec, row: dict, reused: bool) -> EvalResult:
        ci = (row["ci_low"], row["ci_high"]) if row.get("ci_low") is not None else None
        return EvalResult(self.target.label, spec.text, row["domain"], row["metric"], row["value"], row["n"],
                          row.get("tokens"), row.get("stderr"), row.get("harness_version"), reused, ci,
                          row.get("ci_resamples"))

    def _prompt_format(self) -> str:
        """`auto` resolved against the base model's tokenizer, for a fine-tune too: the trainer saves a chat template
        into a full fine-tune's folder even when it trained on raw prompts, and a fine-tune evaluated in another
        format than its base would not compare with it row for row."""
        from capsel.cap_engine.prompt_format import resolve_prompt_format
        from capsel.models.loading import describe_model

        tokenizer = describe_model(self.target.base_model).tokenizer
        return resolve_prompt_format(self.request.options.scoring.prompt_format, tokenizer)

    def _loss_rows(self, spec: EvalSpec, prompt_format: str) -> tuple[list[RowOutcome], list[dict]]:
        from capsel.evaluation.heldout_loss import context_length, heldout_loss, loss_rows
        from capsel.evaluation.targets import load_target
        from capsel.ingest.example_file import read_examples

        options = self.request.options
        examples = read_examples(spec.path, "eval", fields=options.fields, domain=options.domain)
        if self.loaded is None:
            self.loaded = load_target(self.target, options.dtype, options.device)
        loaded = self.loaded
        config = options.scoring.model_copy(update={"prompt_format": prompt_format})
        rows = loss_rows(examples, loaded.info.tokenizer, config, context_length(loaded))
        what = f"{self.target.label}: {spec.text}"
        report_stage(f"evaluate {what}", self.run_id, unit="rows")
        report_progress(0, len(rows))
        done = 0

        def advance(n: int) -> None:
            nonlocal done
            done += n
            report_progress(done)
            self.on_progress(what, done, len(rows))

        self.on_progress(what, 0, len(rows))
        outcomes = heldout_loss(loaded, rows, options.batch_size, advance)
        version = f"capsel {code_version()}"
        return outcomes, [{**_summary_row(summary), "tokens": int(summary.weight), "stderr": None,
                           "harness_version": version} for summary in summarise(outcomes, per_domain=True)]

    def _harness_rows(self, spec: EvalSpec) -> tuple[list[RowOutcome], list[dict]]:
        from capsel.evaluation.harness import HarnessTask, run_harness
        from capsel.evaluation.harness_output import sample_outcomes
        from capsel.models.devices import resolve_device
        from capsel.side_environments import HARNESS

        options = self.request.options
        task = HarnessTask("humaneval" if spec.kind == "humaneval" else "gsm8k", spec.path, options.fewshot_file,
                           options.limit, options.max_new_tokens, options.allow_code_execution)
        python = HARNESS.python(self.ctx.settings.harness_python)
        work_dir = self.request.work_root / "evaluations" / self.target.model_fingerprint / f"{spec.kind}-{self.run_id}"
        what = f"{self.target.label}: {spec.text}"
        report_stage(f"evaluate {what}", self.run_id, unit="samples")

        def progress(done: int, total: int | None) -> None:
            report_progress(done, total)
            self.on_progress(what, done, total)

        result = run_harness(self.target.model_dir, task, work_dir, python, adapter_dir=self.target.adapter_dir,
                             device=resolve_device(options.device), batch_size=options.batch_size,
                             on_progress=progress, on_notice=self.on_notice)
        outcomes, rows = [], []
        for metric in result.metrics:
            questions = sample_outcomes(result.samples_path, metric)
            [summary] = summarise(questions, per_domain=False)
            outcomes += questions
            # the value is lm-eval's own (the same mean of the logged outcomes), beside the interval they give
            rows.append({**_summary_row(summary), "value": metric.value, "n": metric.n, "tokens": None,
                         "stderr": metric.stderr, "harness_version": result.harness_version})
        return outcomes, rows

    def close(self) -> None:
        self.loaded = None


def _summary_row(summary: MetricSummary) -> dict:
    low, high = summary.ci95 if summary.ci95 is not None else (None, None)
    return {"domain": summary.domain, "metric": summary.metric, "value": summary.value, "n": summary.n,
            "ci_low": low, "ci_high": high, "ci_resamples": summary.resamples, "ci_seed": summary.seed}


def store_evaluation(con, key: dict, run_id: str, rows: list[dict], outcomes: list[RowOutcome]) -> None:
    """An evaluation's metrics, its rows' outcomes and the mark that they are complete, as one transaction."""
    with transaction(con):
        for table in ("evaluations", "evaluation_rows", "evaluation_sets"):
            run_sql(con, f"evaluation/clear_{table}", key)
        for index, row in enumerate(rows):
            if index:
                fault_point("evaluate.between_results")
            run_sql(con, "evaluation/evaluation_insert", row)
        if outcomes:
            run_sql(con, "evaluation/evaluation_rows_insert", {**key, "run_id": run_id, "rows": [
                {"metric": o.metric, "row_index": o.row_index, "domain": o.domain, "outcome": o.outcome,
                 "weight": o.weight} for o in outcomes]})
        run_sql(con, "evaluation/evaluation_set_insert", {**key, "run_id": run_id, "n_results": len(rows),
                                                          "n_rows": len(outcomes)})
