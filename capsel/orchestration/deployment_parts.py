"""A run's parameter part merged field by field with its deployment's: a run that sets `sources.domain` keeps the
deployment's `sources.paths`. Prefect itself replaces a part whole."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

Part = TypeVar("Part", bound=BaseModel)
DISCRIMINATOR = "method"  # a scorer spec of another method has other fields: given, it replaces the part


def merged_part(given: Part, deployed: Any) -> Part:
    """`given` with every field it does not set itself (nested ones too) taken from the deployment's `deployed`."""
    if not isinstance(deployed, dict):
        return given
    explicit = given.model_dump(mode="json", exclude_unset=True)
    if DISCRIMINATOR in explicit and DISCRIMINATOR in deployed and explicit[DISCRIMINATOR] != deployed[DISCRIMINATOR]:
        return given
    return type(given).model_validate(_deep_merge(deployed, explicit))


def _deep_merge(base: dict, over: dict) -> dict:
    merged = dict(base)
    for key, value in over.items():
        merged[key] = _deep_merge(base[key], value) if isinstance(value, dict) and isinstance(base.get(key), dict) \
            else value
    return merged
