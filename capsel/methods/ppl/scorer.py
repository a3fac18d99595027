"""PPL baseline: perplexity of the reference response under the model, with CAP's token limits.

The paper scores PPL with CAP's tokenisation and limits (last 256 prompt ids, first 48 response ids,
6-id minimum). When CAP already scored a candidate with the same model and limits, its stored PPL
is the very number: it is reused and the model does not run.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Mapping, Sequence

import torch
from pydantic import ConfigDict, Field

from capsel.cap_engine.batching import right_padded
from capsel.cap_engine.config import HORIZON, PROMPT_TOKENS, ScoringConfig
from capsel.cap_engine.divergence import token_nll
from capsel.cap_engine.forward import extend, pad_id, prefill
from capsel.cap_engine.inputs import SHORT_PROMPT, SHORT_RESPONSE, CandidateText
from capsel.cap_engine.multimodal_inputs import model_inputs
from capsel.cap_engine.vision_batch import vision_batches
from capsel.methods.ppl import PplSpec
from capsel.models.loading import LoadedModel
from capsel.scorers.baseline import BaselineResult
from capsel.scorers.lm_scorer import LmConfig, LmScorer


class PplConfig(LmConfig):
    """The limits PPL shares with CAP (docs/method.md steps 2-4)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    method: ClassVar[str] = "ppl"

    prompt_tokens: int = Field(PROMPT_TOKENS, gt=0, description="keep the last P prompt ids")
    horizon: int = Field(HORIZON, gt=0, description="keep the first R response ids")
    min_prompt_tokens: int = Field(2, ge=1, description="fewer prompt ids: excluded short_prompt")
    min_response_tokens: int = Field(6, ge=1, description="fewer response ids: excluded short_response")

    def token_limits(self) -> ScoringConfig:
        """The same limits as a CAP scoring config, so inputs are built by the engine's own code."""
        return ScoringConfig(
            prompt_tokens=self.prompt_tokens, horizon=self.horizon,
            min_prompt_tokens=self.min_prompt_tokens, min_response_tokens=self.min_response_tokens,
            prompt_format=self.prompt_format,
        )

    def matches_cap(self, stored: dict) -> bool:
        """True when a stored CAP scoring config used these limits, so its divergences' PPL is this PPL."""
        limits = self.token_limits().generation_config()
        # compared whole, so a raw PPL never takes the PPL of a chat-format CAP run, nor the other way round
        stored_limits = {name: value for name, value in stored.items() if name not in ("kind", "early", "late")}
        return stored.get("kind") == "scoring" and stored_limits == {
            name: value for name, value in limits.items() if name != "kind"
        }


class PplScorer(LmScorer):
    """exp(mean NLL) of the kept response ids after the kept prompt: one prompt prefill, one y branch."""

    config: PplConfig

    def reusable_cap_configs(self, known_configs: Sequence[dict]) -> list[str]:
        """The CAP configs with PPL's own limits: their stored PPL is this PPL."""
        return [row["config_hash"] for row in known_configs if self.config.matches_cap(row["config"])]

    def reuse(self, row: dict) -> BaselineResult | None:
        """CAP's PPL, or its short-prompt/short-response exclusion; an empty y-hat leaves PPL to compute.

        CAP measures an image row conditioned on its images, so its PPL is taken for one too. Otherwise a
        vision-language model computes it from the pictures and the prompt; a text model cannot, and excludes
        the row (needs_multimodal_scorer).
        """
        if row.get("has_cap"):
            if row["cap_ppl"] is not None:
                return BaselineResult(row["candidate_id"], score=float(row["cap_ppl"]))
            if row["cap_excluded_reason"] in (SHORT_PROMPT, SHORT_RESPONSE):
                return BaselineResult(row["candidate_id"], excluded_reason=row["cap_excluded_reason"])
        return None if self.info.is_multimodal else super().reuse(row)

    def score(self, candidates: Sequence[CandidateText]) -> list[BaselineResult]:
        """PPL per candidate, or the exclusion CAP would give it (a VLM's prompts carry their pictures)."""
        limits = self.config.token_limits()
        inputs = model_inputs(candidates, self.info, limits)
        eligible = [item for item in inputs if not item.excluded_reason]
        values = {}
        if eligible:
            with torch.inference_mode():
                # a VLM's prompts go with their pictures' tensors, in batches whose images stack (vision_batch)
                batches = (vision_batches(self.loaded.model, eligible, len(eligible), _vision,
                                          lambda item: len(item.prompt_ids))
                           if self.info.is_multimodal else [eligible])
                for batch in batches:
                    ppls = response_perplexity(
                        self.loaded, [item.prompt_ids for item in batch], [item.response_ids for item in batch],
                        [_vision(item) for item in batch] if self.info.is_multimodal else None)
                    values.update({item.candidate_id: ppl for item, ppl in zip(batch, ppls)})
        return [
            BaselineResult(item.candidate_id, excluded_reason=item.excluded_reason)
            if item.excluded_reason else BaselineResult(item.candidate_id, score=values[item.candidate_id])
            for item in inputs
        ]


def _vision(item: Any) -> Mapping[str, Any]:
    """A VLM input's processor tensors (capsel.cap_engine.multimodal_inputs.MultimodalInput)."""
    return item.vision


def response_perplexity(
    loaded: LoadedModel, prompts: Sequence[Sequence[int]], responses: Sequence[Sequence[int]],
    visions: Sequence[Mapping[str, Any]] | None = None,
) -> list[float]:
    """exp(mean -log p(y_t | x, y_<t)) per row: the prompt's last logits predict y_1, y's own logits the rest.

    `visions`: a VLM's processor tensors for each prompt."""
    state = prefill(loaded, prompts, visions, room=max(map(len, responses), default=0))
    ids, mask = right_padded(responses, pad_id(loaded), loaded.input_device)
    logits = extend(loaded, state, ids, mask)
    predictors = torch.cat([state.last_logits[:, None], logits[:, :-1]], dim=1)
    nll = token_nll(predictors.flatten(0, 1), ids.flatten()).view(ids.shape).cpu()
    lengths = mask.sum(-1).cpu()
    sums = (nll * mask.cpu()).sum(-1)
    return [math.exp(float(total) / int(length)) for total, length in zip(sums, lengths)]


def ppl_scorer(spec: PplSpec) -> PplScorer:
    """The PPL scorer for the spec's LM (weights load only if something must be computed)."""
    info = spec.model.describe()
    config = PplConfig(prompt_tokens=spec.prompt_tokens, horizon=spec.horizon,
                       prompt_format=spec.model.resolved_prompt_format(info))
    return PplScorer(config, info, spec.batch_size)
