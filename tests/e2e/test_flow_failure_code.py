"""A flow run that fails with a capsel error ends the CLI with that error's exit code (a refused gate: 4)."""

from __future__ import annotations

import pytest
from prefect import flow

from capsel.cli.flow_state import flow_failure
from capsel.errors import CapselError, ExitCode, OptionError

pytestmark = pytest.mark.e2e


class RefusedByGate(CapselError):
    exit_code = ExitCode.GATE_FAILED


@flow
def refusing_flow(kind: str) -> None:
    if kind == "gate":
        raise RefusedByGate("the data-quality gate failed 1 of 20 expectations; nothing was published")
    if kind == "option":
        raise OptionError("[[budget]] must be at least 1")
    raise RuntimeError("a worker crashed")


@pytest.mark.parametrize(("kind", "code", "text"), [
    ("gate", ExitCode.GATE_FAILED, "data-quality gate failed"),
    ("option", ExitCode.USAGE, "must be at least 1"),
    ("crash", ExitCode.DATA, "flow run ended FAILED"),
])
def test_the_failed_runs_own_error_decides_the_exit_code(prefect_api, kind, code, text):
    state = refusing_flow(kind, return_state=True)
    assert state.is_failed()
    error = flow_failure(state, "flow run")
    assert error.exit_code == code and text in str(error)
