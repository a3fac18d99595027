"""The whole example as one text, for scorers that read it outside the model's own format (rater, encoder)."""

from __future__ import annotations

from capsel.cap_engine.inputs import CandidateText, prompt_text

# The paper concatenates instruction, optional input and response; it names no separator, so each
# part goes on its own line, as the prompt already joins instruction and input.
SEPARATOR = "\n"


def example_text(candidate: CandidateText) -> str:
    """instruction.strip() [+ newline + input.strip()] + newline + response.strip()."""
    return f"{prompt_text(candidate.instruction, candidate.input)}{SEPARATOR}{candidate.response.strip()}"
