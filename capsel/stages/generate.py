"""Stage: y-hat for every candidate in scope that lacks one (resumable), by a generator that is closed after it.

Which methods score against the model's own answers is their declaration's (`Method.yhat`): this stage knows no
method by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from capsel.cap_engine.generation import Generator, close_generator
from capsel.cap_engine.generators import check_generator, generator_for
from capsel.config import Settings
from capsel.errors import OptionError
from capsel.methods.method import load_object
from capsel.methods.registry import all_methods, method
from capsel.runner.job import PAGE_SIZE, run_scorer
from capsel.runner.progress import RunSummary
from capsel.scorers.base import Scorer
from capsel.stages.context import RunContext
from capsel.store.scope import Scope


@dataclass(frozen=True)
class GenerateRequest:
    """Which y-hat writer (a method's scorer paired with a generator: `yhat_writer`), for which candidates."""

    writer: Scorer
    scope: Scope = Scope()


def yhat_scorer_class(name: str) -> Callable[[Scorer, Generator], Scorer]:
    """What builds the scorer that writes y-hat for the method `name` from the method's scorer and a generator, or
    an OptionError when the method scores against no y-hat."""
    declared = method(name).yhat
    if declared is None:
        takers = ", ".join(m.name for m in all_methods().values() if m.yhat) or "no method"
        raise OptionError(f"a y-hat [[generator]] applies to {takers}, not to {name}")
    return load_object(declared)


def pre_pass_for(name: str, settings: Settings, scorer: Scorer) -> Scorer | None:
    """What writes every missing y-hat before scoring starts: vLLM's worker, paired with the scorer; None for hf,
    whose scorer generates batch by batch on the model it already holds."""
    check_generator(name)
    return None if name == "hf" else yhat_writer(name, settings, scorer)


def yhat_writer(name: str, settings: Settings, scorer: Scorer) -> Scorer:
    """The writer of `scorer`'s y-hat by the generator `name`; a method that takes none is refused before any
    generator starts."""
    writer_class = yhat_scorer_class(scorer.method)
    # a y-hat method's scorer is on the engine
    generator = generator_for(name, settings, scorer)  # type: ignore[arg-type]
    try:
        return writer_class(scorer, generator)
    except BaseException:
        close_generator(generator)
        raise


def run_pre_pass(writer: Scorer | None, scope: Scope, ctx: RunContext) -> RunSummary | None:
    """The y-hat pre-pass `pre_pass_for` gave, when it gave one: every missing y-hat in scope written, then the
    generator closed (a vLLM engine frees its GPU memory), so the scorer that loads next finds every y-hat stored."""
    return generate(GenerateRequest(writer, scope), ctx) if writer is not None else None


def generate(request: GenerateRequest, ctx: RunContext) -> RunSummary:
    """Write every missing y-hat in scope (each batch committed, resumable), then close the writer's generator (a
    vLLM engine frees its GPU memory).

    A generator batch above the runner's page (vLLM) gets pages that large, so it can schedule a whole batch at
    once instead of draining its queue every page.
    """
    writer = request.writer
    try:
        return run_scorer(ctx.con, writer, request.scope, ctx.sink, page_size=max(PAGE_SIZE, writer.batch_size),
                          parent_run_id=ctx.parent_run_id, prefect_flow_run_id=ctx.prefect_flow_run_id)
    finally:
        writer.close()
