"""Task: evaluate fine-tuned and base models and store every metric (stored results are reused)."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from capsel.stages.context import RunContext
from capsel.stages.evaluate import EvaluateRequest, EvaluateSummary, Progress, evaluate


@task(name="evaluate", cache_policy=NO_CACHE)
def evaluate_task(request: EvaluateRequest, ctx: RunContext, on_progress: Progress) -> EvaluateSummary:
    """Run each evaluation on each target of the request."""
    return evaluate(request, ctx, on_progress)
