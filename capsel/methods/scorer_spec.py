"""`ScorerSpec`: any method's spec, one discriminated union on `method` over every scored method, plugins included.

The flows' parameter forms and every spec a worker receives validate against it. Building it imports every
method module, so it lives apart from the registry, which imports them only when first asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Union

from pydantic import Field

from capsel.methods.registry import scored_methods
from capsel.methods.spec import MethodSpec


def _spec_union():
    specs = tuple(method.spec for method in scored_methods())
    return Annotated[Union[specs], Field(discriminator="method")]


if TYPE_CHECKING:
    ScorerSpec = MethodSpec
else:
    ScorerSpec = _spec_union()
