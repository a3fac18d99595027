"""Stage: reconcile interrupted publishes, pick a selection under a budget, gate it and publish it, as one run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from capsel.db.progress_file import report_stage
from capsel.errors import OptionError
from capsel.faults import fault_point
from capsel.methods.method import load_object
from capsel.methods.registry import method
from capsel.publish.destination import Destination
from capsel.publish.publish import PublishedSelection, publish_selection
from capsel.publish.reconcile import Reconciled, reconcile_selections
from capsel.runs import recorded_run
from capsel.selection.params import SelectionParams
from capsel.selection.pinned_scores import pinned_cap_scores
from capsel.selection.plan import Selection, build_selection
from capsel.selection.residualize import DomainFit
from capsel.selection.scoring_key import ScoringKey, resolve_scoring_key, with_layer_split
from capsel.stages.context import RunContext, held_for_run


@dataclass(frozen=True)
class SelectRequest:
    """The selection wanted, where it is published, and (LESS) the target file its scores were taken against.

    `key`: the scores to read when a step before resolved them (a flow, so its residualize step fits the same
    blocks); else they are resolved from the request. `fits`: that key's per-domain fits, when a residualize step
    made them, so they are fitted once.
    """

    selection: SelectionParams
    out_dir: Destination
    target: Path | None = None
    target_max: int | None = None
    key: ScoringKey | None = None
    fits: tuple[DomainFit, ...] | None = None


@dataclass
class SelectSummary:
    """The selection picked, where it was published, and what the reconcile before it repaired."""

    selection: Selection
    published: PublishedSelection
    run_id: str
    reconciled: Reconciled


def selection_key(ctx: RunContext, request: SelectRequest) -> ScoringKey | None:
    """The scores a selection reads: the method's own, CAP's for the random control (all candidates when nothing
    is scored), and for LESS the scores against the named target; CAP's over the request's blocks (--early/--late)."""
    wanted = request.selection
    declared = method(wanted.method)
    if request.target is not None or request.target_max is not None:
        if declared.target is None or request.target is None:
            raise OptionError("[[target]] (and [[target_max]]) select with a [[method]] that scores against a "
                              "target (LESS)")
        scores_hash = load_object(declared.target.scores_hash)
        wanted = wanted.model_copy(update={"config_hash": wanted.config_hash
                                           or scores_hash(ctx.con, request.target, request.target_max)})
    # random draws from CAP's eligible pool when there is one; every other method needs its own scores
    key = resolve_scoring_key(ctx.con, wanted.model, wanted.config_hash, required=declared.scores_of is None,
                              method=declared.scored_by)
    # resolved here, so the flow's residualize step fits the blocks the selection reads
    return with_layer_split(ctx.con, key, wanted.early, wanted.late) if key is not None else None


def select_and_publish(request: SelectRequest, ctx: RunContext) -> SelectSummary:
    """Build the selection from the request's key (resolved from the request when not given), gate it and
    publish it.

    Recorded as one 'select' run; a gate failure publishes nothing (GateFailedError). Publishes a kill left
    unfinished, in the output folder or any recorded one, are finished or undone first.
    """
    key = request.key if request.key is not None else selection_key(ctx, request)
    on_step = ctx.on_step
    counters: dict = {}
    with recorded_run(ctx.con, "select", counters, config=request.selection.record(),
                      model_fingerprint=key.model_fingerprint if key else None, parent_run_id=ctx.parent_run_id,
                      prefect_flow_run_id=ctx.prefect_flow_run_id) as run_id:
        reconciled = reconcile_selections(ctx.con, [request.out_dir])
        if reconciled:
            counters["reconciled"] = reconciled.as_dict()
        # the picks, excluded.parquet and the report rank by one z (in a run, the residualize step's)
        with held_for_run(ctx, pinned_cap_scores(ctx.con, key)):
            on_step("selecting")
            selection = build_selection(ctx.con, request.selection, key, request.fits)
            counters.update(n_members=len(selection.members), n_domains=len(selection.quotas))
            fault_point("select.before_publish")
            on_step("data-quality gate and publish")
            report_stage("data-quality gate and publish", run_id, unit="files")
            published = publish_selection(ctx.con, selection, request.out_dir, run_id,
                                          ctx.settings.report_max_points,
                                          on_file_written=lambda path: on_step(f"wrote {path.name}"))
        counters["selection_id"] = published.selection_id
    return SelectSummary(selection, published, run_id, reconciled)
