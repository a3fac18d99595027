"""How a flow run started from the CLI ended, as the error the CLI exits with."""

from __future__ import annotations

from typing import Any

from capsel.errors import CapselError


def flow_failure(state: Any, what: str) -> CapselError:
    """The CapselError a failed run ended with (a refused gate keeps its exit code 4), else one naming the state."""
    try:
        cause = state.result(raise_on_failure=False)
    except Exception as exc:  # noqa: BLE001 -- an unreadable result (MissingResult): the message says why
        cause = exc
    if isinstance(cause, CapselError):
        return cause
    return CapselError(f"{what} ended {state.type.value}: {state.message}")
