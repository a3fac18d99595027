"""CAP as one scorer among the others: pending rows (with or without a stored y-hat) in, generation and divergence out.

The weights load on first use, so the writer's copy of a sharded run (which only keys and pages) never
loads them. Batches are cut as the engine measures them: stored y-hat first, then fresh candidates,
exclusions together, the rest length-sorted.
"""

from __future__ import annotations

from typing import Any, Sequence

from capsel.cap_engine.batch_memory import resolve_batch_size
from capsel.cap_engine.batching import length_sorted_batches
from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.engine import ScoringEngine
from capsel.cap_engine.inputs import CandidateText, ScoringInput, candidate_text
from capsel.cap_engine.multimodal_inputs import build_multimodal_inputs, model_inputs, with_vision
from capsel.cap_engine.results import GenerationResult, ScoredCandidate
from capsel.methods.cap import CapSpec
from capsel.methods.cap.keys import CapKeys
from capsel.models.loading import LoadedModel, ModelInfo, load_model
from capsel.scorers.base import Counted, Scorer, model_identity


class CapScorer(CapKeys, Scorer):
    """y-hat and the per-layer divergence profile of each candidate; results go to `generations` and `divergences`."""

    table = "divergences"
    run_kind = "score"

    def __init__(self, info: ModelInfo, config: ScoringConfig, batch_size: int | str = 16,
                 loaded: LoadedModel | None = None):
        super().__init__(model_identity(info), 0)
        self._batch_setting = batch_size
        self.info = info
        self.config = config.resolved(info.tokenizer)
        self._loaded = loaded
        self._engine: ScoringEngine | None = None

    @classmethod
    def of(cls, engine: ScoringEngine) -> "CapScorer":
        """The scorer of an engine already built (its model loaded)."""
        scorer = cls(engine.loaded.info, engine.config, engine.batch_size, engine.loaded)
        scorer._engine = engine
        return scorer

    @property
    def holds_pictures(self) -> bool:
        """True for a vision-language model: its prepared items carry their pictures' tensors."""
        return self.info.is_multimodal

    def run_config(self) -> dict:
        """The scoring config's fields and both hashes."""
        return {**self.config.model_dump(), "generation_hash": self.config.generation_hash,
                "scoring_hash": self.config.scoring_hash, "batch_size": self.batch_size}

    @property
    def batch_size(self) -> int:
        """Candidates per model batch; 'auto' is sized from free GPU memory once the weights are loaded."""
        if self._batch_setting != "auto":
            return int(self._batch_setting)
        return self.engine.batch_size

    @property
    def engine(self) -> ScoringEngine:
        """The engine, with the weights loaded on first use."""
        if self._engine is None:
            loaded = self._loaded or load_model(self.info)
            batch_size = resolve_batch_size(self._batch_setting, loaded, self.config)
            self._engine = ScoringEngine(loaded, self.config, batch_size)
        return self._engine

    def item(self, row: dict) -> CandidateText | GenerationResult:
        """A stored y-hat awaiting its divergence, or the candidate's texts."""
        if not row["has_generation"]:
            return super().item(row)
        stored = GenerationResult(
            candidate_id=row["candidate_id"],
            prompt_ids=list(row["prompt_ids"] or []),
            response_ids=list(row["response_ids"] or []),
            generated_ids=None if row["generated_ids"] is None else list(row["generated_ids"]),
            excluded_reason=row["generation_excluded_reason"],
            generator="stored",
        )
        if self.info.is_multimodal and stored.excluded_reason is None:
            # the stored ids hold the expanded image tokens; the pixels come from the prompt built again
            (prepared,) = build_multimodal_inputs([candidate_text(row)], self.info.processor, self.config)
            return with_vision(stored, prepared)
        return stored

    def prepare(self, texts: Sequence[CandidateText]) -> list[ScoringInput]:
        """Tokenise and truncate candidates (no weights needed); short ones carry their exclusion."""
        return model_inputs(texts, self.info, self.config)

    def batches(self, items: Sequence[Any]) -> list[list[Any]]:
        """Stored y-hat first, then fresh candidates tokenised; exclusions together, the rest length-sorted."""
        stored = [item for item in items if isinstance(item, GenerationResult)]
        return input_batches(stored, self.batch_size) + input_batches(self.prepared(items), self.batch_size)

    def score(self, items: Sequence[Any]) -> list[ScoredCandidate]:
        """Divergences for stored y-hat; y-hat and divergence together (fused) for the rest, in input order."""
        stored = [item for item in items if isinstance(item, GenerationResult)]
        prepared = self.prepared(items)
        results = {d.candidate_id: ScoredCandidate(None, d) for d in (self.engine.score(stored) if stored else [])}
        if prepared:
            results.update((s.candidate_id, s) for s in self.engine.generate_and_score(prepared))
        return [results[item.candidate_id] for item in items]

    def prepared(self, items: Sequence[Any]) -> list[ScoringInput]:
        """The fresh items tokenised (those already tokenised kept as they are)."""
        ready = [item for item in items if isinstance(item, ScoringInput)]
        return ready + self.prepare([item for item in items if isinstance(item, CandidateText)])

    def counted(self, results: Sequence[ScoredCandidate]) -> Counted:
        """Measured, excluded by reason, and the non-empty y-hat generated on the way."""
        counted = super().counted(results)
        generated = sum(1 for result in results if result.generation and result.generation.generated_ids)
        return Counted(counted.n_done, counted.excluded, generated)


def input_batches(items: Sequence[ScoringInput | GenerationResult], batch_size: int) -> list[list]:
    """Excluded items together in one batch (they never reach the model), the rest length-sorted."""
    excluded = [item for item in items if item.excluded_reason]
    eligible = [item for item in items if not item.excluded_reason]
    batches = length_sorted_batches(eligible, batch_size, lambda item: (len(item.prompt_ids), len(item.response_ids)))
    return ([excluded] if excluded else []) + batches


def cap_scorer(spec: CapSpec, loaded: LoadedModel | None = None) -> CapScorer:
    """CAP's scorer for the spec's model (identity and tokenizer now, weights on first use unless `loaded`)."""
    info = loaded.info if loaded else spec.model.describe()
    return CapScorer(info, spec.scoring_config(), spec.batch_size, loaded)
