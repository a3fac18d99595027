"""[prompt; response] cut to a window of `max_length` ids, as IFD (Li et al., Cherry LLM) cuts it; LESS takes the
same inputs.

Tokens: the prompt as CAP builds it (instruction, newline, input; default special tokens, or the chat template in
the chat prompt format), the response without special tokens. The response keeps its first max_length - |prompt|
ids. `empty_prefix` is what the tokenizer puts around an empty text (e.g. BOS): when that is nothing, the first
response id has no prediction, so one id fewer is scored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from pydantic import Field

from capsel.cap_engine.inputs import SHORT_RESPONSE, CandidateText, prompt_text, response_token_ids
from capsel.cap_engine.prompt_format import prompt_token_ids
from capsel.scorers.lm_scorer import LmConfig

PROMPT_FILLS_WINDOW = "prompt_fills_window"


@dataclass(frozen=True)
class WindowInput:
    """One candidate's ids: the prompt, the kept response, and how many response ids both losses score."""

    candidate_id: str
    prompt_ids: list[int]
    response_ids: list[int]
    n_scored: int
    excluded_reason: str | None


class WindowConfig(LmConfig):
    """The config of a scorer that reads [prompt; response] cut to a window (IFD's and LESS's derive from it)."""

    max_length: int = Field(1024, gt=1, description="[prompt; response] is cut to its first max_length ids")
    min_response_tokens: int = Field(1, ge=1, description="fewer scored response ids: excluded short_response")


def window_inputs(
    candidates: Sequence[CandidateText], tokenizer, config: WindowConfig, empty_prefix: Sequence[int]
) -> list[WindowInput]:
    """Tokenise and truncate as the module docstring says; too-long prompts and short responses are excluded."""
    if not candidates:
        return []
    prompts = prompt_token_ids(tokenizer, [prompt_text(c.instruction, c.input) for c in candidates],
                               config.prompt_format)
    responses = response_token_ids(tokenizer, [c.response for c in candidates])
    inputs = []
    for candidate, prompt, response in zip(candidates, prompts, responses):
        kept = list(response[: max(0, config.max_length - len(prompt))])
        n_scored = len(kept) if empty_prefix else len(kept) - 1
        if len(prompt) >= config.max_length:
            reason = PROMPT_FILLS_WINDOW
        elif n_scored < config.min_response_tokens:
            reason = SHORT_RESPONSE
        else:
            reason = None
        inputs.append(WindowInput(candidate.candidate_id, list(prompt), kept, max(n_scored, 0), reason))
    return inputs
