"""The pipelines, declared once: which steps, in what order, and what each hands the next.

Selection: ingest → score → residualize → select (gate and publish inside). Evaluation: fine-tune (one model per
selection and seed) → evaluate. The Prefect flows and the lab run these declarations with `run_steps`; a door
chooses only how a step is called (here, as a Prefect task, as a sharded subflow) and what it shows of each
outcome. A CLI command runs one of these steps by itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Generic, Iterable, Sequence, TypeVar

from capsel.faults import fault_point
from capsel.ingest.summary import IngestReport
from capsel.methods.registry import method
from capsel.selection.scoring_key import ScoringKey
from capsel.stages.context import RunContext, run_scope
from capsel.stages.evaluate import EvaluateRequest, EvaluateSummary, evaluate
from capsel.stages.finetune import FinetuneStageRequest, FinetuneSummary, finetune_selection
from capsel.stages.ingest import IngestRequest, ingest, kept_nothing, lost_files_error
from capsel.stages.residualize import ResidualizeRequest, ResidualizeSummary, residualize
from capsel.stages.score import ScoreRequest, ScoreSummary, score
from capsel.stages.select import SelectRequest, SelectSummary, select_and_publish, selection_key
from capsel.stages.step import Step

Plan = TypeVar("Plan")
Outcome = TypeVar("Outcome")


@dataclass(frozen=True)
class DeclaredStep(Generic[Plan, Outcome]):
    """One step of a pipeline: its name (a flow's task name), the step, the requests it runs on, made from the
    plan and the outcome so far (none: skipped; several: one call each), what it is doing on one (a progress
    line), and how its summary joins the outcome."""

    name: str
    step: Step[Any, Any]
    requests: Callable[[Plan, Outcome], Iterable[Any]]
    describe: Callable[[Any], str]
    keep: Callable[[Plan, Outcome, Any, RunContext], None]


# how a door runs one step on one request (the flows: as a Prefect task)
Call = Callable[[DeclaredStep, Any, RunContext], Any]


def call_here(declared: DeclaredStep, request: Any, ctx: RunContext) -> Any:
    """The step, run in this process."""
    return declared.step(request, ctx)


def run_steps(steps: Sequence[DeclaredStep[Plan, Outcome]], plan: Plan, outcome: Outcome, ctx: RunContext,
              call: Call = call_here, after: Callable[[str, Outcome], None] = lambda name, outcome: None) -> Outcome:
    """Run the steps in order on the plan, each summary kept in `outcome`. `after` hears each step's end, failed
    ones too, so a door can report what the run did before an error. What a step holds for the run (CAP's pinned
    z, from residualize to the select step and its report) is let go when the last step ends."""
    with run_scope(ctx) as ctx:
        for declared in steps:
            try:
                for request in declared.requests(plan, outcome):
                    declared.keep(plan, outcome, call(declared, request, ctx), ctx)
            finally:
                after(declared.name, outcome)
    return outcome


@dataclass(frozen=True)
class SelectionPlan:
    """One selection run: the files to ingest (None: none arrived), the scoring, the selection (its model and
    config hash are those this run scored; None: the run ends with scoring), the domains to fit, and whether a
    run that added nothing publishes."""

    ingest: IngestRequest | None
    score: ScoreRequest
    select: SelectRequest | None = None
    domains: Sequence[str] | None = None
    publish_unchanged: bool = True


@dataclass
class SelectionOutcome:
    """What the selection steps returned so far, and why the run published nothing when it did not."""

    ingest: IngestReport | None = None
    score: ScoreSummary | None = None
    select_request: SelectRequest | None = None
    key: ScoringKey | None = None
    residuals: ResidualizeSummary | None = None
    selected: SelectSummary | None = None
    notes: list[str] = field(default_factory=list)

    def n_new(self) -> int:
        """Candidates this run ingested or scored."""
        ingested = self.ingest.totals().n_inserted if self.ingest else 0
        return ingested + (self.score.scoring.n_processed if self.score else 0)

    def publishes(self, plan: SelectionPlan) -> bool:
        """The run goes on to a new selection version (a rescore that added nothing stops after scoring)."""
        return plan.publish_unchanged or self.n_new() > 0


def _keep_ingest(plan: SelectionPlan, outcome: SelectionOutcome, report: IngestReport, ctx: RunContext) -> None:
    outcome.ingest = report
    if kept_nothing(report) and (lost := lost_files_error(report)) is not None:
        # nothing downstream runs on a pool that lacks every row it was given; a file of bad rows beside good
        # ones (the demo's) is quarantined and counted, and the run goes on
        raise lost
    fault_point("pipeline.after_ingest")


def _keep_score(plan: SelectionPlan, outcome: SelectionOutcome, summary: ScoreSummary, ctx: RunContext) -> None:
    outcome.score = summary
    fault_point("pipeline.after_score")
    if plan.select is None:
        return
    if not outcome.publishes(plan):
        outcome.notes.append("nothing new was ingested or scored: no new selection version")
    # which scores the selection reads (the random control: CAP's), resolved once, so residualize fits those
    outcome.select_request = _select_request(plan, summary)
    outcome.key = selection_key(ctx, outcome.select_request)


def _select_request(plan: SelectionPlan, scored: ScoreSummary) -> SelectRequest:
    """The selection over what this run scored: by the scores' key, or (LESS) by those against the target."""
    assert plan.select is not None
    config_hash = None if plan.select.target else scored.key.config_hash
    wanted = plan.select.selection.model_copy(update={"model": scored.key.model_fingerprint,
                                                      "config_hash": config_hash})
    return replace(plan.select, selection=wanted)


def _residualize_requests(plan: SelectionPlan, outcome: SelectionOutcome) -> Iterable[ResidualizeRequest]:
    if outcome.key is not None and outcome.publishes(plan) and method(outcome.key.method).residualized:
        yield ResidualizeRequest(outcome.key, plan.domains)


def _keep_residuals(plan: SelectionPlan, outcome: SelectionOutcome, summary: ResidualizeSummary,
                    ctx: RunContext) -> None:
    outcome.residuals = summary


def _select_requests(plan: SelectionPlan, outcome: SelectionOutcome) -> Iterable[SelectRequest]:
    if outcome.select_request is None or not outcome.publishes(plan):
        return
    fault_point("pipeline.before_select")
    # the fits of this run's residualize step, so the regression is fitted once
    fits = tuple(outcome.residuals.fits) if outcome.residuals and outcome.residuals.fits else None
    yield replace(outcome.select_request, key=outcome.key, fits=fits)


def _keep_selected(plan: SelectionPlan, outcome: SelectionOutcome, summary: SelectSummary, ctx: RunContext) -> None:
    outcome.selected = summary


SELECTION_STEPS: tuple[DeclaredStep[SelectionPlan, SelectionOutcome], ...] = (
    DeclaredStep("ingest", ingest, lambda plan, outcome: [plan.ingest] if plan.ingest else [],
                 lambda request: "ingest", _keep_ingest),
    DeclaredStep("score", score, lambda plan, outcome: [plan.score], lambda request: "score", _keep_score),
    DeclaredStep("residualize", residualize, _residualize_requests, lambda request: "residualize",
                 _keep_residuals),
    DeclaredStep("select-and-publish", select_and_publish, _select_requests,
                 lambda request: "select, gate and publish", _keep_selected),
)


@dataclass(frozen=True)
class EvaluationPlan:
    """Fine-tune one model per request (a selection and seed each), then evaluate them all with `evaluate`, whose
    own targets (the base model) are evaluated after them."""

    finetunes: Sequence[FinetuneStageRequest]
    evaluate: EvaluateRequest


@dataclass
class EvaluationOutcome:
    """The models fine-tuned so far (reused ones included) and the evaluation of them all."""

    finetuned: list[FinetuneSummary] = field(default_factory=list)
    evaluated: EvaluateSummary | None = None


def _evaluate_requests(plan: EvaluationPlan, outcome: EvaluationOutcome) -> Iterable[EvaluateRequest]:
    tuned = tuple(model.finetune_id for model in outcome.finetuned)
    yield replace(plan.evaluate, targets=tuned + tuple(plan.evaluate.targets))


def _keep_finetuned(plan: EvaluationPlan, outcome: EvaluationOutcome, summary: FinetuneSummary,
                    ctx: RunContext) -> None:
    outcome.finetuned.append(summary)


def _keep_evaluated(plan: EvaluationPlan, outcome: EvaluationOutcome, summary: EvaluateSummary,
                    ctx: RunContext) -> None:
    outcome.evaluated = summary


EVALUATION_STEPS: tuple[DeclaredStep[EvaluationPlan, EvaluationOutcome], ...] = (
    DeclaredStep("finetune", finetune_selection, lambda plan, outcome: plan.finetunes,
                 lambda request: f"fine-tuning on {request.selection_id}, seed {request.seed}", _keep_finetuned),
    DeclaredStep("evaluate", evaluate, _evaluate_requests,
                 lambda request: f"evaluating {len(request.targets)} models", _keep_evaluated),
)
