"""Task: fine-tune a base model on one published selection with LlamaFactory (an identical finished one is reused)."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from capsel.stages.context import RunContext
from capsel.stages.finetune import FinetuneStageRequest, FinetuneSummary, TrainProgress, finetune_selection


@task(name="finetune", cache_policy=NO_CACHE)
def finetune_task(request: FinetuneStageRequest, ctx: RunContext, on_progress: TrainProgress) -> FinetuneSummary:
    """Train (or reuse) the model for one selection, base model, recipe and seed."""
    return finetune_selection(request, ctx, on_progress)
