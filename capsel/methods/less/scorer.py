"""LESS gradient features: one unit-normalised 8,192-d sketch of each candidate's LoRA gradient.

The paper's configuration (appendix "Scoring Configuration", LESS): rank-8 LoRA, alpha 16, dropout 0
on q/k/v/o, no warmup training; the response-only causal-LM loss over [prompt; response] cut to
1,024 tokens (tokenised and cut exactly as IFD's conditional loss); a fixed-seed signed CountSketch
to 8,192 dimensions; unit length. Features are stored per (candidate, model, config) in
`gradient_features`; the cosine to a target set is taken later (`capsel.methods.less.job`), so a
new target reuses every stored feature.
"""

from __future__ import annotations

import math
from typing import ClassVar, Sequence

import torch
from pydantic import ConfigDict, Field

from capsel.cap_engine.inputs import SHORT_PROMPT, CandidateText
from capsel.methods.less import LessSpec
from capsel.methods.less.countsketch import CountSketch
from capsel.methods.less.lora_gradients import GradientSketcher, LoraSpec, attach_lora
from capsel.models.loading import ModelInfo
from capsel.scorers.base import Table
from capsel.scorers.baseline import BaselineResult
from capsel.scorers.lm_scorer import LmScorer
from capsel.scorers.window import WindowConfig, window_inputs

FEATURES_METHOD = "less_features"
NON_FINITE = "non_finite"
ZERO_GRADIENT = "zero_gradient"
QKVO = ("q_proj", "k_proj", "v_proj", "o_proj")


class LessConfig(WindowConfig):
    """Everything that fixes a gradient feature; its hash keys the stored features."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    method: ClassVar[str] = FEATURES_METHOD

    lora_rank: int = Field(8, gt=0, description="LoRA rank r")
    lora_alpha: float = Field(16.0, gt=0, description="LoRA scaling numerator (scale alpha / r)")
    lora_dropout: float = Field(0.0, ge=0, le=0, description="0: the gradient must be deterministic")
    target_modules: tuple[str, ...] = Field(QKVO, description="modules that get LoRA adapters")
    warmup_steps: int = Field(0, ge=0, le=0, description="no warmup training (the paper's cost setting)")
    lora_init_seed: int = Field(0, description="seed of the LoRA A init (B is zero)")
    sketch_dim: int = Field(8192, gt=0, description="CountSketch output dimension")
    sketch_seed: int = Field(0, description="seed of the CountSketch hashes and signs")
    loss: str = Field("mean_response_nll", description="mean NLL over the response tokens, prompt masked")

    def lora_spec(self) -> LoraSpec:
        """The adapters this config attaches."""
        return LoraSpec(self.lora_rank, self.lora_alpha, self.lora_dropout, self.target_modules, self.lora_init_seed)


class LessFeatureScorer(LmScorer):
    """One backward per example (batch size 1, as the paper); results go to `gradient_features`."""

    config: LessConfig

    table: ClassVar[Table] = "gradient_features"

    def __init__(self, config: LessConfig, info: ModelInfo, batch_size: int = 16):
        super().__init__(config, info, batch_size)
        self._sketcher: GradientSketcher | None = None

    @property
    def sketcher(self) -> GradientSketcher:
        """The model with LoRA attached and the sketch hooked on, built on first use."""
        if self._sketcher is None:
            parameters = attach_lora(self.loaded.model, self.config.lora_spec())
            sketch = CountSketch(self.config.sketch_dim, self.config.sketch_seed)
            self._sketcher = GradientSketcher(self.loaded, parameters, sketch)
        return self._sketcher

    def score(self, candidates: Sequence[CandidateText]) -> list[BaselineResult]:
        """A unit feature per candidate, or why it has none (window full, short response, zero gradient)."""
        # the prompt is never empty, so every kept response id is scored (IFD's non-empty prefix case)
        inputs = window_inputs(candidates, self.info.tokenizer, self.config, empty_prefix=[0])
        results = []
        for item in inputs:
            if not item.prompt_ids:
                results.append(BaselineResult(item.candidate_id, excluded_reason=SHORT_PROMPT))
            elif item.excluded_reason:
                results.append(BaselineResult(item.candidate_id, excluded_reason=item.excluded_reason))
            else:
                loss, sketched = self.sketcher.sketched(item.prompt_ids, item.response_ids)
                results.append(_feature(item.candidate_id, loss, sketched))
        return results


def _feature(candidate_id: str, loss: float, sketched: torch.Tensor) -> BaselineResult:
    norm = float(sketched.double().norm())
    if not math.isfinite(loss) or not math.isfinite(norm):
        return BaselineResult(candidate_id, excluded_reason=NON_FINITE)
    if norm == 0.0:
        return BaselineResult(candidate_id, excluded_reason=ZERO_GRADIENT)
    return BaselineResult(candidate_id, embedding=(sketched.double() / norm).float().tolist())


def less_scorer(spec: LessSpec) -> LessFeatureScorer:
    """The LESS feature scorer for the spec's LM (its target is scored after the features)."""
    info = spec.model.describe()
    config = LessConfig(max_length=spec.max_length, prompt_format=spec.model.resolved_prompt_format(info))
    return LessFeatureScorer(config, info, spec.batch_size)
