"""Task: per-domain OLS of D_late on D_early over the whole scored pool."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from capsel.selection.scoring_key import ScoringKey
from capsel.stages.context import RunContext
from capsel.stages.residualize import ResidualizeSummary, residualize


@task(name="residualize", cache_policy=NO_CACHE)
def residualize_task(ctx: RunContext, key: ScoringKey, domains: list[str] | None) -> ResidualizeSummary:
    """Fit every domain of `key`; a degenerate domain fails the task with the reason."""
    return residualize(ctx, key, domains)
