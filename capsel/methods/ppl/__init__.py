"""PPL: the perplexity of the reference response with CAP's tokenisation and limits (Marion et al.)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from capsel.cap_engine.config import HORIZON, PROMPT_TOKENS
from capsel.methods.method import Method
from capsel.methods.selectors import TopScore
from capsel.methods.spec import MethodSpec, ModelSpec


class PplSpec(MethodSpec):
    """PPL of the reference response with CAP's tokenisation and limits (reuses CAP's stored PPL)."""

    method: Literal["ppl"] = "ppl"
    model: ModelSpec
    prompt_tokens: int = Field(PROMPT_TOKENS, gt=0, description="P: keep the last P prompt ids")
    horizon: int = Field(HORIZON, gt=0, description="R: keep the first R response ids")


METHOD = Method(
    name="ppl", summary="perplexity of the reference response (Marion et al.)", selector=TopScore("high"),
    spec=PplSpec, scorer="capsel.methods.ppl.scorer:ppl_scorer", reused_as="taken from CAP's stored PPL", ppl="scores",
    help="needs --model; reuses the PPL that `capsel score` stored with the same model and limits",
)
