"""The y-hat generator a run asks for by name: HF (this process, the scorer's own model) or vLLM (a worker process)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from capsel.errors import OptionError

if TYPE_CHECKING:  # the engine loads torch: a command checks its --generator before it needs one
    from capsel.cap_engine.config import ScoringConfig
    from capsel.cap_engine.engine import ScoringEngine
    from capsel.cap_engine.generation import Generator
    from capsel.config import Settings
    from capsel.models.loading import ModelInfo

GENERATORS = ("hf", "vllm")


class EngineScorer(Protocol):
    """A scorer over the engine: its model, its scoring config and the engine (loaded on first use)."""

    info: ModelInfo
    config: ScoringConfig

    @property  # a property, so the scorer may load the engine on first use
    def engine(self) -> ScoringEngine: ...


def check_generator(name: str) -> None:
    """Only the two backends exist."""
    if name not in GENERATORS:
        raise OptionError(f"unknown generator {name!r}; use {' or '.join(GENERATORS)}")


def generator_for(name: str, settings: Settings, scorer: EngineScorer) -> Generator:
    """vLLM set up from the settings, or HF greedy decoding on the scorer's model (loaded now)."""
    from capsel.cap_engine.generation import HFGenerator

    check_generator(name)
    if name == "vllm":
        from capsel.cap_engine.vllm_generation import VLLMGenerator, VLLMOptions

        return VLLMGenerator(scorer.info, scorer.config, VLLMOptions(
            gpu_memory_utilization=settings.vllm_gpu_memory_utilization,
            tensor_parallel_size=settings.vllm_tensor_parallel_size, batch_size=settings.vllm_batch_size,
            enforce_eager=settings.vllm_enforce_eager, in_process=not settings.vllm_worker_process,
        ))
    engine = scorer.engine
    return HFGenerator(engine.loaded, scorer.config.horizon, engine.batch_size)
