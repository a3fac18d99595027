"""The y-hat generator a run asks for by name: HF (this process, the scorer's own model) or vLLM (a worker process)."""

from __future__ import annotations

from capsel.config import Settings
from capsel.errors import OptionError
from capsel.scorers.cap import CapScorer
from capsel.scoring.generation import Generator, HFGenerator

GENERATORS = ("hf", "vllm")


def check_generator(name: str) -> None:
    """Only the two backends exist."""
    if name not in GENERATORS:
        raise OptionError(f"unknown generator {name!r}; use {' or '.join(GENERATORS)}")


def generator_for(name: str, settings: Settings, scorer: CapScorer) -> Generator:
    """vLLM set up from the settings, or HF greedy decoding on the scorer's model (loaded now)."""
    check_generator(name)
    if name == "vllm":
        from capsel.scoring.vllm_generation import VLLMGenerator, VLLMOptions

        return VLLMGenerator(scorer.info, scorer.config, VLLMOptions(
            gpu_memory_utilization=settings.vllm_gpu_memory_utilization,
            tensor_parallel_size=settings.vllm_tensor_parallel_size, batch_size=settings.vllm_batch_size,
            enforce_eager=settings.vllm_enforce_eager, in_process=not settings.vllm_worker_process,
        ))
    engine = scorer.engine
    return HFGenerator(engine.loaded, scorer.config.horizon, engine.batch_size)
