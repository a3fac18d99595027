"""Stage: per-domain OLS of D_late on D_early over the whole scored pool, and the candidates at both ends of z."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from capsel.db.progress_file import report_stage
from capsel.db.records import fetch_records
from capsel.selection.pinned_scores import pinned_cap_scores
from capsel.selection.residualize import DomainFit, fit_domains
from capsel.selection.scoring_key import ScoringKey
from capsel.stages.context import RunContext, held_for_run


@dataclass(frozen=True)
class ResidualizeRequest:
    """Whose scores to fit (a CAP key, its layer split resolved), which domains (None: all) and how many
    examples to show at each end of z."""

    key: ScoringKey
    domains: Sequence[str] | None = None
    n_examples: int = 3


@dataclass
class ResidualizeSummary:
    """Each domain's fit, and its top and bottom candidates by z (id, z and instruction)."""

    fits: list[DomainFit]
    examples: list[dict]


def residualize(request: ResidualizeRequest, ctx: RunContext) -> ResidualizeSummary:
    """Fit every domain of the key (a degenerate one raises with the reason) and pick the examples per end."""
    key = request.key
    report_stage("residualize", ctx.parent_run_id, unit="domains")
    # the fit's spread and the examples read one z, and in a run so does its select step
    with held_for_run(ctx, pinned_cap_scores(ctx.con, key)):
        fits = fit_domains(ctx.con, key, request.domains)
        examples = fetch_records(ctx.con, "selection/extreme_examples", {
            "model_fingerprint": key.model_fingerprint, "config_hash": key.config_hash,
            "n_examples": request.n_examples, **key.layer_params(),
        })
    return ResidualizeSummary(fits, examples)
