"""Plain results of the pure scoring layer: what a worker returns and the single writer stores."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GenerationResult:
    """The model's greedy response y-hat for one candidate (None when the candidate is excluded first)."""

    candidate_id: str
    prompt_ids: list[int]
    response_ids: list[int]
    generated_ids: list[int] | None
    excluded_reason: str | None
    generator: str
    images_dropped: int = 0  # whole images cut from the front of a multimodal prompt by truncation


@dataclass(frozen=True)
class DivergenceResult:
    """Per-layer divergence profile, its early/late means and the reference PPL (all None when excluded)."""

    candidate_id: str
    n_aligned: int | None
    layer_divergence: list[float] | None
    d_early: float | None
    d_late: float | None
    ppl: float | None
    excluded_reason: str | None
    images_dropped: int = 0  # whole images cut from the front of a multimodal prompt by truncation

    @classmethod
    def excluded(cls, candidate_id: str, reason: str, images_dropped: int = 0) -> "DivergenceResult":
        """A result row that only records why the candidate was not scored."""
        return cls(candidate_id, None, None, None, None, None, reason, images_dropped)


@dataclass(frozen=True)
class ScoredCandidate:
    """Divergence of one candidate, with the generation made on the way (None when y-hat was already stored)."""

    generation: GenerationResult | None
    divergence: DivergenceResult

    @property
    def candidate_id(self) -> str:
        """The candidate scored."""
        return self.divergence.candidate_id

    @property
    def excluded_reason(self) -> str | None:
        """Why the candidate has no divergence profile, if it has none."""
        return self.divergence.excluded_reason
