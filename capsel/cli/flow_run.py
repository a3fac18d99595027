"""Run a flow from the command line: its parameters validated with each problem named by its flag, the flow run
here (against a Prefect server, or a temporary one), its counters printed or its failure raised as one line."""

from __future__ import annotations

from typing import TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from capsel.cli.common import console
from capsel.cli.flow_state import flow_failure
from capsel.cli.prefect_server import use_temporary_server
from capsel.cli.specs import flag_problems
from capsel.errors import OptionError

M = TypeVar("M", bound=BaseModel)


def validated(model: type[M], body: dict) -> M:
    """The flow parameters `body` as `model`, or one CapselError naming each problem by its flag."""
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise OptionError(f"invalid flow parameters: {flag_problems(exc)}") from exc


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
