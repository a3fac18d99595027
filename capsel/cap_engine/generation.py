"""Generators of y-hat from truncated prompt ids: one interface, an HF backend here, vLLM in its own module."""

from __future__ import annotations

from typing import Any, Mapping, Protocol, Sequence

import torch

from capsel.cap_engine.batching import length_sorted_batches
from capsel.cap_engine.decoding import greedy_generate
from capsel.cap_engine.inputs import EMPTY_GENERATION, ScoringInput
from capsel.cap_engine.results import GenerationResult
from capsel.cap_engine.vision_batch import vision_batches
from capsel.models.loading import LoadedModel


class Generator(Protocol):
    """Greedy continuation of prompt ids: at most R tokens, stopping before EOS (EOS not included)."""

    name: str
    batch_size: int

    def generate(
        self, prompt_ids_batch: Sequence[Sequence[int]], vision_batch: Sequence[Mapping[str, Any] | None] | None = None
    ) -> list[list[int]]:
        """y-hat for each prompt, in the order given; a VLM's prompts come with their processor tensors."""
        ...


def close_generator(generator: Generator) -> None:
    """Release a generator's engine (vLLM frees its GPU memory); HF's holds none, its model is the scorer's."""
    if hasattr(generator, "close"):
        generator.close()


class HFGenerator:
    """Batched greedy decoding with transformers: length-sorted batches, left padding, one cached step per token."""

    name = "hf"

    def __init__(self, loaded: LoadedModel, horizon: int, batch_size: int = 16):
        self.loaded = loaded
        self.horizon = horizon
        self.batch_size = batch_size

    def generate(
        self, prompt_ids_batch: Sequence[Sequence[int]], vision_batch: Sequence[Mapping[str, Any] | None] | None = None
    ) -> list[list[int]]:
        """y-hat for each prompt, in the order given; a VLM's prompts share a batch where their images stack."""
        indexed = list(enumerate(prompt_ids_batch))
        outputs: list[list[int]] = [[] for _ in indexed]
        visions = None if vision_batch is None else [vision or {} for vision in vision_batch]
        if visions is None:
            batches = length_sorted_batches(indexed, self.batch_size, lambda item: len(item[1]))
        else:
            batches = vision_batches(self.loaded.model, indexed, self.batch_size, lambda item: visions[item[0]],
                                     lambda item: len(item[1]))
        with torch.inference_mode():
            for batch in batches:
                generated = greedy_generate(self.loaded, [prompt for _, prompt in batch], self.horizon,
                                            None if visions is None else [visions[index] for index, _ in batch])
                for (index, _), tokens in zip(batch, generated):
                    outputs[index] = tokens
        return outputs


def generation_results(inputs: Sequence[ScoringInput], generator: Generator) -> list[GenerationResult]:
    """Run the generator on the eligible inputs; excluded ones and empty generations carry their reason."""
    eligible = [item for item in inputs if item.excluded_reason is None]
    # a VLM's prepared inputs carry the processor's tensors (capsel.cap_engine.multimodal_inputs.MultimodalInput)
    prompts = [item.prompt_ids for item in eligible]
    if any(hasattr(item, "vision") for item in eligible):
        generated = iter(generator.generate(prompts, [getattr(item, "vision", None) for item in eligible]))
    else:
        generated = iter(generator.generate(prompts) if eligible else [])
    results = []
    for item in inputs:
        tokens = None if item.excluded_reason else list(next(generated))
        reason = item.excluded_reason or (EMPTY_GENERATION if tokens == [] else None)
        results.append(GenerationResult(
            candidate_id=item.candidate_id,
            prompt_ids=item.prompt_ids,
            response_ids=item.response_ids,
            generated_ids=tokens,
            excluded_reason=reason,
            generator=generator.name,
        ))
    return results
