"""CAP's y-hat alone, as one scorer among the others: the generation pre-pass (vLLM, or HF greedy decoding) runs
through the same writer loop as every scoring run, and writes only `generations`.

Scoring later finds the stored y-hat and measures only the divergences (`capsel.methods.cap.scorer`).
"""

from __future__ import annotations

from typing import Any, Sequence

from capsel.cap_engine.generation import Generator, close_generator, generation_results
from capsel.cap_engine.results import GenerationResult
from capsel.methods.cap.keys import CapKeys
from capsel.methods.cap.scorer import CapScorer, input_batches
from capsel.scorers.base import Counted, Scorer


class YhatScorer(CapKeys, Scorer):
    """y-hat for each candidate by `generator`, under the keys of CAP's scorer `cap` (model, generation config):
    stored under CAP's, with CAP's configs recorded so a later scoring run finds them."""

    table = "generations"
    run_kind = "generate"

    def __init__(self, cap: CapScorer, generator: Generator):
        super().__init__(cap.identity, generator.batch_size)
        # CAP's keys and tokenising at the generator's batch size: CAP's own weights are never loaded here (an
        # 'auto' batch size would load them to size itself)
        self.keys = CapScorer(cap.info, cap.config, generator.batch_size)
        self.config = self.keys.config
        self.generator = generator

    def run_config(self) -> dict:
        """CAP's config fields and both hashes, the generator's batch size and its name."""
        return {**self.keys.run_config(), "generator": self.generator.name}

    def close(self) -> None:
        """Close the generator: a vLLM engine frees its GPU memory, so CAP's scorer can load next."""
        close_generator(self.generator)

    def batches(self, items: Sequence[Any]) -> list[list[Any]]:
        """Candidates tokenised; exclusions together, the rest length-sorted in batches of the generator's size."""
        return input_batches(self.keys.prepared(items), self.batch_size)

    def score(self, items: Sequence[Any]) -> list[GenerationResult]:
        """The generator's y-hat for the eligible items; excluded and empty ones carry their reason."""
        return generation_results(self.keys.prepared(items), self.generator)

    def counted(self, results: Sequence[GenerationResult]) -> Counted:
        """Every y-hat not excluded was generated."""
        counted = super().counted(results)
        return Counted(counted.n_done, counted.excluded, counted.n_done)
