"""The y-hat generator a run asks for by name: HF (this process, the scorer's own model) or vLLM (a worker process)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from capsel.config import Settings
from capsel.errors import OptionError

if TYPE_CHECKING:  # the engine loads torch: a command checks its --generator before it needs one
    from capsel.cap_engine.generation import Generator
    from capsel.scorers.base import Scorer
    from capsel.scorers.cap import CapScorer

GENERATORS = ("hf", "vllm")


def check_generator(name: str) -> None:
    """Only the two backends exist."""
    if name not in GENERATORS:
        raise OptionError(f"unknown generator {name!r}; use {' or '.join(GENERATORS)}")


def generator_for(name: str, settings: Settings, scorer: CapScorer) -> Generator:
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


def pre_pass_for(name: str, settings: Settings, scorer: Scorer) -> Generator | None:
    """What writes every missing y-hat before scoring starts: vLLM's worker; None for hf, whose scorer
    generates batch by batch on the model it already holds."""
    from capsel.scorers.cap import CapScorer

    check_generator(name)
    if name == "hf":
        return None
    if not isinstance(scorer, CapScorer):
        raise OptionError(f"a y-hat [[generator]] applies to cap, not to {scorer.method}")
    return generator_for(name, settings, scorer)
