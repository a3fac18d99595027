"""CAP, the method of the paper: y-hat, per-layer hidden-state divergence, D_late residualized on D_early per domain,
and the top z under the budget."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from capsel.cap_engine.config import CapLimits, ScoringConfig
from capsel.methods.method import Method
from capsel.methods.selectors import TopResidualZ
from capsel.methods.spec import MethodSpec, ModelSpec


class CapSpec(CapLimits, MethodSpec):
    """CAP (docs/method.md): y-hat, per-layer divergence, D_early and D_late, PPL."""

    method: Literal["cap"] = "cap"
    model: ModelSpec
    # CAP alone can size its batches from free GPU memory
    batch_size: Annotated[int, Field(gt=0)] | Literal["auto"] = Field(  # type: ignore[assignment]
        16, description="candidates per model batch; auto sizes it from free GPU memory")

    def scoring_config(self) -> ScoringConfig:
        """The engine's configuration (prompt format as asked: resolved once the tokenizer is known)."""
        return ScoringConfig(
            prompt_tokens=self.prompt_tokens, horizon=self.horizon, early=self.early, late=self.late,
            min_prompt_tokens=self.min_prompt_tokens, min_response_tokens=self.min_response_tokens,
            prompt_format=self.model.prompt_format,
        )


METHOD = Method(
    name="cap", summary="Counterfactual Assimilation Profile: the top residual z of late- on early-layer divergence",
    selector=TopResidualZ(), spec=CapSpec, scorer="capsel.methods.cap.scorer:cap_scorer", results_table="divergences",
    residualized=True, scoring_reads=("generations",), score_command="capsel score", ppl="measured",
    yhat="capsel.methods.cap.yhat:YhatScorer",
)
