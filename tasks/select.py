"""Task: the selection under its budget, the data-quality gate and the atomic publish, as one recorded run."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from capsel.selection.residualize import DomainFit
from capsel.selection.scoring_key import ScoringKey
from capsel.stages.context import RunContext
from capsel.stages.select import SelectRequest, SelectSummary, select_and_publish


@task(name="select-and-publish", cache_policy=NO_CACHE)
def select_and_publish_task(request: SelectRequest, ctx: RunContext, key: ScoringKey | None,
                            fits: list[DomainFit] | None = None) -> SelectSummary:
    """Size the quotas and pick the members, gate them and publish only if the gate passes; `fits`: the
    residualize task's, not fitted again."""
    return select_and_publish(request, ctx, key, fits=fits)
