"""What every stage is: a step that takes a typed request in a run context and returns a typed summary.

The CLI commands, the Prefect tasks (`capsel.tasks.steps.step_task` wraps any step) and the lab call the same
steps, so a step's outcome and message do not depend on which of them ran it.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from capsel.stages.context import RunContext

Request = TypeVar("Request", contravariant=True)
Summary = TypeVar("Summary", covariant=True)


class Step(Protocol[Request, Summary]):
    """`step(request, ctx) -> summary`: one stage's work, recorded as its runs row(s) in `ctx.con`."""

    def __call__(self, request: Request, ctx: RunContext, /) -> Summary: ...
