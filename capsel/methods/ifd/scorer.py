"""IFD baseline: instruction-following difficulty, PPL(response | prompt) / PPL(response) (Li et al., Cherry LLM).

Tokens: the prompt as CAP builds it (instruction, newline, input; default special tokens, or the
chat template in the chat prompt format), the response without special tokens. Truncation follows
Li et al., who cut [prompt; response] to its first `max_length` tokens and score the unconditional
response over the same span: the response keeps its first max_length - |prompt| ids, and both
losses cover exactly those ids. The unconditional prefix is what the tokenizer puts around an
empty text (e.g. BOS) in either format; when that is nothing, the first response id has no
prediction and both losses start at the second. Prompt ids are context only: they never count in
the conditional loss.
"""

from __future__ import annotations

import math
from typing import ClassVar, Sequence

import torch
from pydantic import ConfigDict

from capsel.cap_engine.inputs import CandidateText
from capsel.methods.ifd import IfdSpec
from capsel.models.loading import ModelInfo
from capsel.scorers.baseline import BaselineResult
from capsel.scorers.lm_scorer import LmScorer
from capsel.scorers.response_loss import response_token_nll
from capsel.scorers.window import WindowConfig, WindowInput, window_inputs

IFD_GE_1 = "ifd_ge_1"
# IFD divides by the response's loss with no instruction; when the instruction holds an image, that loss is
# undefined (the response is about a picture the model never saw), as the paper notes for its Molmo2 run.
IFD_UNDEFINED_WITH_IMAGE = "ifd_undefined_with_image"
NON_FINITE = "non_finite"


class IfdConfig(WindowConfig):
    """IFD's window and exclusion threshold."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    method: ClassVar[str] = "ifd"


def ifd_ratio(conditional: torch.Tensor, unconditional: torch.Tensor) -> float:
    """exp(mean conditional NLL) / exp(mean unconditional NLL), over the same response ids."""
    return math.exp(float(conditional.double().mean()) - float(unconditional.double().mean()))


class IfdScorer(LmScorer):
    """Two forwards per batch: [prompt; response] and [empty-text prefix; response], response ids scored."""

    config: IfdConfig
    image_exclusion: ClassVar[str] = IFD_UNDEFINED_WITH_IMAGE

    def __init__(self, config: IfdConfig, info: ModelInfo, batch_size: int = 16):
        super().__init__(config, info, batch_size)
        self.empty_prefix = list(info.tokenizer("").input_ids)

    def score(self, candidates: Sequence[CandidateText]) -> list[BaselineResult]:
        """IFD per candidate; IFD >= 1 is kept with its score and excluded as ifd_ge_1."""
        inputs = window_inputs(candidates, self.info.tokenizer, self.config, self.empty_prefix)
        eligible = [item for item in inputs if not item.excluded_reason]
        ratios = {}
        if eligible:
            responses = [item.response_ids for item in eligible]
            with torch.inference_mode():
                conditional = response_token_nll(self.loaded, [item.prompt_ids for item in eligible], responses)
                unconditional = response_token_nll(self.loaded, [self.empty_prefix] * len(eligible), responses)
            for item, cond, uncond in zip(eligible, conditional, unconditional):
                # a prompt that is the empty text's ids conditions on nothing: IFD is 1 by definition, not
                # whatever rounding two differently padded forwards leave on either side of it
                same_context = item.prompt_ids == self.empty_prefix
                # the conditional row scores every kept id; compare the ids both rows score
                ratios[item.candidate_id] = 1.0 if same_context else ifd_ratio(cond[-item.n_scored:],
                                                                                uncond[-item.n_scored:])
        return [_result(item, ratios.get(item.candidate_id)) for item in inputs]


def _result(item: WindowInput, ratio: float | None) -> BaselineResult:
    if item.excluded_reason:
        return BaselineResult(item.candidate_id, excluded_reason=item.excluded_reason)
    assert ratio is not None  # every eligible input was measured
    if not math.isfinite(ratio):
        return BaselineResult(item.candidate_id, excluded_reason=NON_FINITE)
    return BaselineResult(item.candidate_id, score=ratio, excluded_reason=IFD_GE_1 if ratio >= 1 else None)


def ifd_scorer(spec: IfdSpec) -> IfdScorer:
    """The IFD scorer for the spec's LM."""
    info = spec.model.describe()
    config = IfdConfig(max_length=spec.max_length, prompt_format=spec.model.resolved_prompt_format(info))
    return IfdScorer(config, info, spec.batch_size)
