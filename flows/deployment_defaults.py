"""The run's parameter parts, each merged field by field with the deployment's part (outside a deployment: as given)."""

from __future__ import annotations

from functools import cache
from typing import Any, TypeVar

from prefect.client.orchestration import get_client
from prefect.runtime import deployment
from pydantic import BaseModel

from capsel.orchestration.deployment_parts import merged_part

Part = TypeVar("Part", bound=BaseModel)


def with_deployment_part(name: str, given: Part) -> Part:
    """`given`, completed with the fields the deployment's `name` part sets and the run did not."""
    deployment_id = deployment.id
    if not deployment_id:
        return given
    return merged_part(given, _deployment_parameters(str(deployment_id)).get(name))


@cache
def _deployment_parameters(deployment_id: str) -> dict[str, Any]:
    # the deployment's own parameters: prefect.runtime's `deployment.parameters` are the run's, parts replaced whole
    with get_client(sync_client=True) as client:
        return dict(client.read_deployment(deployment_id).parameters or {})
