"""Stage: y-hat for every candidate in scope that lacks one (resumable), by a generator that is closed after it."""

from __future__ import annotations

from dataclasses import dataclass

from capsel.cap_engine.generation import Generator
from capsel.runner.job import PAGE_SIZE, run_scorer
from capsel.runner.progress import RunSummary
from capsel.scorers.cap import CapScorer
from capsel.scorers.yhat import YhatScorer
from capsel.stages.context import RunContext
from capsel.store.scope import Scope


@dataclass(frozen=True)
class GenerateRequest:
    """Whose y-hat (CAP's scorer: its model and generation config), made by which generator, for which candidates."""

    scorer: CapScorer
    generator: Generator
    scope: Scope = Scope()


def generate(request: GenerateRequest, ctx: RunContext) -> RunSummary:
    """Write every missing y-hat in scope (each batch committed, resumable), then close the generator (a vLLM
    engine frees its GPU memory).

    A generator batch above the runner's page (vLLM) gets pages that large, so it can schedule a whole batch at
    once instead of draining its queue every page.
    """
    generator = request.generator
    try:
        return run_scorer(ctx.con, YhatScorer(request.scorer, generator), request.scope, ctx.sink,
                          {"generator": generator.name}, page_size=max(PAGE_SIZE, generator.batch_size),
                          parent_run_id=ctx.parent_run_id, prefect_flow_run_id=ctx.prefect_flow_run_id)
    finally:
        if hasattr(generator, "close"):
            generator.close()
