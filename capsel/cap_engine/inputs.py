"""Token ids the method scores: the prompt's last P ids and the response's first R ids, or an exclusion."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.huge_text_cut import HugeTextCut
from capsel.cap_engine.prompt_format import RAW, prompt_token_ids, resolve_prompt_format

SHORT_PROMPT = "short_prompt"
SHORT_RESPONSE = "short_response"
EMPTY_GENERATION = "empty_generation"


@dataclass(frozen=True)
class CandidateText:
    """The text fields of one candidate, as stored in `candidates`, and its images' files.

    `images`: absolute paths in placeholder order; the instruction holds one literal `<image>` per image.
    """

    candidate_id: str
    instruction: str
    input: str
    response: str
    images: tuple[str, ...] = ()


def candidate_text(row: dict) -> CandidateText:
    """The text fields of a stored candidate row."""
    return CandidateText(row["candidate_id"], row["instruction"], row["input"], row["response"],
                         tuple(row.get("images") or ()))


@dataclass(frozen=True)
class ScoringInput:
    """One candidate ready for the model: truncated prompt and response ids, or why it is excluded."""

    candidate_id: str
    prompt_ids: list[int]
    response_ids: list[int]
    excluded_reason: str | None = None


def prompt_text(instruction: str, input_text: str) -> str:
    """instruction.strip(), plus a newline and input.strip() when the stripped input is non-empty."""
    prompt = instruction.strip()
    extra = (input_text or "").strip()
    return f"{prompt}\n{extra}" if extra else prompt


def build_inputs(candidates: Sequence[CandidateText], tokenizer, config: ScoringConfig) -> list[ScoringInput]:
    """Tokenise a batch of candidates the way the method says, in the config's (resolved) prompt format.

    The response is never templated: its ids are the bare text's, with no separator and no end-of-turn token.
    """
    if not candidates:
        return []
    prompt_format = resolve_prompt_format(config.prompt_format, tokenizer)
    prompts = [prompt_text(c.instruction, c.input) for c in candidates]
    responses = [c.response.strip() for c in candidates]
    # huge texts are cut first, keeping exactly the ids kept below (capsel/cap_engine/huge_text_cut.py)
    if (cap := HugeTextCut.of(tokenizer)) is not None:
        if prompt_format == RAW or cap.chat_safe:
            prompts = [cap.tail(prompt, config.prompt_tokens) for prompt in prompts]
        responses = [cap.head(response, config.horizon) for response in responses]
    prompt_ids = prompt_token_ids(tokenizer, prompts, prompt_format)
    response_ids = response_token_ids(tokenizer, responses)
    return [
        _truncated(c.candidate_id, list(p), list(r), config)
        for c, p, r in zip(candidates, prompt_ids, response_ids)
    ]


def response_token_ids(tokenizer, responses: Sequence[str]) -> list[list[int]]:
    """Ids of each stripped response without special tokens (docs/method.md step 3, untruncated)."""
    if not responses:
        return []
    return [list(ids) for ids in tokenizer([r.strip() for r in responses], add_special_tokens=False).input_ids]


def _truncated(candidate_id: str, prompt: list[int], response: list[int], config: ScoringConfig) -> ScoringInput:
    if len(prompt) < config.min_prompt_tokens:
        reason = SHORT_PROMPT
    elif len(response) < config.min_response_tokens:
        reason = SHORT_RESPONSE
    else:
        reason = None
    return ScoringInput(
        candidate_id=candidate_id,
        prompt_ids=prompt[-config.prompt_tokens:],
        response_ids=response[: config.horizon],
        excluded_reason=reason,
    )
