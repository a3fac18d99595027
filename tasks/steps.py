"""Any stage as a Prefect task: the step itself, run as a task of the flow (no cache: each run does its work)."""

from __future__ import annotations

from typing import TypeVar

from prefect import Task, task
from prefect.cache_policies import NO_CACHE

from capsel.stages.context import RunContext
from capsel.stages.step import Step

Request = TypeVar("Request")
Summary = TypeVar("Summary")


def step_task(step: Step[Request, Summary], name: str) -> Task[[Request, RunContext], Summary]:
    """`step` as the task `name`: same request, context and summary."""
    return task(name=name, cache_policy=NO_CACHE)(step)
