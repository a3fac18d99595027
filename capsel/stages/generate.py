"""Stage: y-hat for every candidate in scope that lacks one (resumable), by a generator that is closed after it."""

from __future__ import annotations

from dataclasses import dataclass

from capsel.cap_engine.generation import Generator
from capsel.runner.generation import run_generation
from capsel.runner.progress import RunSummary
from capsel.scorers.cap import CapScorer
from capsel.stages.context import RunContext
from capsel.store.scope import Scope


@dataclass(frozen=True)
class GenerateRequest:
    """Whose y-hat (CAP's scorer: its model and generation config), made by which generator, for which candidates."""

    scorer: CapScorer
    generator: Generator
    scope: Scope = Scope()


def generate(request: GenerateRequest, ctx: RunContext) -> RunSummary:
    """Write every missing y-hat in scope, then close the generator (a vLLM engine frees its GPU memory)."""
    try:
        return run_generation(ctx.con, request.scorer.info, request.generator, request.scorer.config, request.scope,
                              ctx.sink, {"generator": request.generator.name})
    finally:
        if hasattr(request.generator, "close"):
            request.generator.close()
