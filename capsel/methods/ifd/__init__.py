"""IFD: instruction-following difficulty, PPL(response | prompt) / PPL(response), highest first (Li et al.)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from capsel.methods.method import Method
from capsel.methods.selectors import TopScore
from capsel.methods.spec import MethodSpec, ModelSpec


class IfdSpec(MethodSpec):
    """IFD: PPL(response | prompt) / PPL(response), [prompt; response] cut to max_length ids (Li et al.)."""

    method: Literal["ifd"] = "ifd"
    model: ModelSpec
    max_length: int = Field(1024, gt=1, description="[prompt; response] is cut to its first max_length ids")


METHOD = Method(
    name="ifd", summary="instruction-following difficulty, highest first (Li et al.)", selector=TopScore("high"),
    spec=IfdSpec, scorer="capsel.methods.ifd.scorer:ifd_scorer", help="needs --model",
)
