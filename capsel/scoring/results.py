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

    @classmethod
    def excluded(cls, candidate_id: str, reason: str) -> "DivergenceResult":
        """A result row that only records why the candidate was not scored."""
        return cls(candidate_id, None, None, None, None, None, reason)


@dataclass(frozen=True)
class ScoredCandidate:
    """Generation and divergence of one candidate from the fused path."""

    generation: GenerationResult
    divergence: DivergenceResult
