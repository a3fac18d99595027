"""The name a flow run's progress file gives its process: the flow and the run, not the worker's command line."""

from __future__ import annotations

from prefect.runtime import flow_run


def flow_job() -> str:
    """`flow <flow name> run <run name>` for the flow run in progress."""
    return f"flow {flow_run.flow_name} run {flow_run.name}"
