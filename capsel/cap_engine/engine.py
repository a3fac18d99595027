"""The DB-free scoring layer: candidates in, plain results out (what a worker process runs)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Mapping, Sequence, TypeVar

import torch

from capsel.cap_engine.batching import length_sorted_batches
from capsel.cap_engine.branches import compare_stored, generate_and_compare
from capsel.cap_engine.config import ScoringConfig, layer_split
from capsel.cap_engine.divergence import PairMeasure, summarize
from capsel.cap_engine.generation import HFGenerator, generation_results
from capsel.cap_engine.inputs import EMPTY_GENERATION, CandidateText, ScoringInput
from capsel.cap_engine.multimodal_inputs import model_inputs, with_vision
from capsel.cap_engine.results import DivergenceResult, GenerationResult, ScoredCandidate
from capsel.cap_engine.vision_batch import prompts_per_batch, vision_batches
from capsel.errors import CapselError
from capsel.models.loading import LoadedModel

Item = TypeVar("Item", GenerationResult, ScoringInput)
Row = TypeVar("Row")


class ScoringEngine:
    """CAP measurements for batches of candidates with one loaded HF model (or VLM); touches no database.

    A vision-language model's candidates share a batch where their image tensors stack (vision_batch), each
    batch of prompts with one image shape; the others score one candidate per batch.
    """

    def __init__(self, loaded: LoadedModel, config: ScoringConfig, batch_size: int = 16):
        self.loaded = loaded
        self.multimodal = loaded.info.is_multimodal
        self.config = config.resolved(loaded.processor if self.multimodal else loaded.info.tokenizer)
        self.batch_size = prompts_per_batch(loaded.model, batch_size) if self.multimodal else batch_size
        self.early_layers, self.late_layers = layer_split(len(loaded.blocks), config.early, config.late)

    def prepare(self, candidates: Sequence[CandidateText]) -> list[ScoringInput]:
        """Tokenise and truncate candidates; short ones come back with their exclusion reason.

        On a VLM every candidate (with images or none) goes through the processor (MultimodalInput).
        """
        return model_inputs(candidates, self.loaded.info, self.config)

    def generate(self, inputs: Sequence[ScoringInput]) -> list[GenerationResult]:
        """y-hat for every eligible input with the HF backend, in input order (a VLM's carry their tensors)."""
        results = generation_results(inputs, HFGenerator(self.loaded, self.config.horizon, self.batch_size))
        if not self.multimodal:
            return results
        return [with_vision(result, item) for result, item in zip(results, inputs)]  # type: ignore[arg-type]

    def score(self, generations: Sequence[GenerationResult]) -> list[DivergenceResult]:
        """Divergences from stored generations: the prompt runs once, both branches share its cache.

        On a VLM each generation must be a MultimodalGeneration (see multimodal_inputs.with_vision).
        """
        def measure(batch: list[GenerationResult]) -> list[DivergenceResult]:
            prompts, responses = [g.prompt_ids for g in batch], [g.response_ids for g in batch]
            measured = compare_stored(self.loaded, prompts, responses, [g.generated_ids or [] for g in batch],
                                      self._batch_vision(batch))
            return self._summaries(batch, measured)

        def excluded(g: GenerationResult, reason: str) -> DivergenceResult:
            return DivergenceResult.excluded(g.candidate_id, reason, g.images_dropped)

        return self._batched(generations, measure, excluded)

    def generate_and_score(self, inputs: Sequence[ScoringInput]) -> list[ScoredCandidate]:
        """y-hat and divergence together: y-hat's block outputs are taken during its own decoding."""
        def measure(batch: list[ScoringInput]) -> list[ScoredCandidate]:
            prompts, responses = [item.prompt_ids for item in batch], [item.response_ids for item in batch]
            generated, measured = generate_and_compare(self.loaded, prompts, responses, self.config.horizon,
                                                       self._batch_vision(batch))
            generations = [
                GenerationResult(item.candidate_id, item.prompt_ids, item.response_ids, tokens,
                                 None if tokens else EMPTY_GENERATION, "hf", _dropped(item))
                for item, tokens in zip(batch, generated)
            ]
            return [ScoredCandidate(g, d) for g, d in zip(generations, self._summaries(generations, measured))]

        def excluded(item: ScoringInput, reason: str) -> ScoredCandidate:
            generation = GenerationResult(item.candidate_id, item.prompt_ids, item.response_ids, None, reason, "hf",
                                          _dropped(item))
            return ScoredCandidate(generation, DivergenceResult.excluded(item.candidate_id, reason, _dropped(item)))

        return self._batched(inputs, measure, excluded)

    def _summaries(self, batch: list[GenerationResult], measured: PairMeasure) -> list[DivergenceResult]:
        summaries = summarize(
            [g.candidate_id for g in batch], measured, [len(g.response_ids) for g in batch],
            self.early_layers, self.late_layers,
        )
        return [
            DivergenceResult.excluded(g.candidate_id, g.excluded_reason, g.images_dropped) if g.excluded_reason
            else replace(summary, images_dropped=g.images_dropped)
            for g, summary in zip(batch, summaries)
        ]

    def _batch_vision(self, batch: Sequence[Any]) -> list[Mapping[str, Any]] | None:
        """A VLM batch's processor tensors, one mapping per row; None for a text model."""
        if not self.multimodal:
            return None
        visions = [_vision(item) for item in batch]
        if any(vision is None for vision in visions):
            raise CapselError("a vision-language model scores prepared multimodal candidates (with their tensors)")
        return visions  # type: ignore[return-value]

    def _batched(
        self, rows: Sequence[Item], measure: Callable[[list[Item]], list[Row]], excluded: Callable[[Item, str], Row]
    ) -> list[Row]:
        """Results in input order: excluded rows without the model, the rest in length-sorted batches."""
        results: dict[int, Row] = {}
        eligible = []
        for index, row in enumerate(rows):
            if row.excluded_reason:
                results[index] = excluded(row, row.excluded_reason)
            else:
                eligible.append((index, row))
        def length(item: tuple[int, Item]) -> tuple[int, int]:
            return len(item[1].prompt_ids), len(item[1].response_ids)

        batches = (vision_batches(self.loaded.model, eligible, self.batch_size, lambda item: _vision(item[1]), length)
                   if self.multimodal else length_sorted_batches(eligible, self.batch_size, length))
        with torch.inference_mode():
            for batch in batches:
                for (index, _), result in zip(batch, measure([row for _, row in batch])):
                    results[index] = result
        return [results[index] for index in range(len(rows))]


def _vision(item: Any) -> Mapping[str, Any] | None:
    """The processor tensors a multimodal input or generation carries (None for text rows)."""
    return getattr(item, "vision", None)


def _dropped(item: Any) -> int:
    """How many images truncation dropped from the item's prompt (0 for text rows)."""
    return int(getattr(item, "images_dropped", 0))
