"""Run a flow from the command line: the flow run here (against a Prefect server, or a temporary one), its
counters printed or its failure raised as one line."""

from __future__ import annotations

import orjson

from capsel.cli.common import console
from capsel.cli.flow_state import flow_failure
from capsel.cli.prefect_server import use_temporary_server


def run_flow(flow, parameters: dict) -> None:
    """Run `flow(**parameters)` here; print its counters, or raise its failure as one clean line."""
    use_temporary_server()
    state = flow(**parameters, return_state=True)
    if state.is_completed():
        result = state.result()
        counters = result.counters() if hasattr(result, "counters") else result
        # ASCII: a note can quote a domain, whose bidi overrides or C1 controls must not reach the terminal raw
        console.print_json(orjson.dumps(counters, default=str).decode(), ensure_ascii=True)
        return
    raise flow_failure(state, "flow run")
