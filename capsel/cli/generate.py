"""`capsel generate`: the model's greedy response y-hat for every pending candidate."""

from __future__ import annotations

from capsel.cli.common import DbOption, console
from capsel.cli.progress import CandidateProgress, print_summary
from capsel.cli.scoring_options import (
    BatchSizeOption, DeviceOption, DomainOption, DtypeOption, GeneratorOption, HorizonOption, LimitOption,
    ModelOption, PromptFormatOption, PromptTokensOption, ThreadsOption, TrustRemoteCodeOption, check_generator,
    for_model, model_info, scoring_config, scoring_db, scoring_settings,
)
from capsel.config import Settings
from capsel.scoring.config import ScoringConfig
from capsel.scoring.batch_memory import resolve_batch_size
from capsel.scoring.generation import Generator, HFGenerator
from capsel.models.loading import ModelInfo, load_model
from capsel.scoring.runner import RunSummary, run_generation
from capsel.scoring.store import Scope


def generate(
    model: ModelOption = None,
    horizon: HorizonOption = 48,
    prompt_tokens: PromptTokensOption = 256,
    prompt_format: PromptFormatOption = "auto",
    dtype: DtypeOption = None,
    device: DeviceOption = None,
    batch_size: BatchSizeOption = None,
    generator: GeneratorOption = "hf",
    trust_remote_code: TrustRemoteCodeOption = False,
    threads: ThreadsOption = None,
    domain: DomainOption = None,
    limit: LimitOption = None,
    db: DbOption = None,
) -> None:
    """Generate y-hat (greedy, at most R tokens, stopping before EOS) for candidates that lack one."""
    check_generator(generator)
    settings = scoring_settings(db, dtype, device, batch_size, threads)
    config = scoring_config(horizon=horizon, prompt_tokens=prompt_tokens, prompt_format=prompt_format)
    info = model_info(settings, model, trust_remote_code)
    config = for_model(config, info)
    with scoring_db(settings) as con:
        summary = generate_pending(con, settings, info, config, generator, Scope(domain, limit))
        print_summary("generate", summary, "generated")


def generate_pending(con, settings: Settings, info: ModelInfo, config: ScoringConfig, generator: str,
                     scope: Scope) -> RunSummary:
    """Run the chosen generator over the pending candidates, releasing it afterwards."""
    backend = _generator(settings, info, config, generator)
    try:
        with CandidateProgress("generating") as progress:
            return run_generation(con, info, backend, config, scope, progress, {"generator": generator})
    finally:
        if hasattr(backend, "close"):
            backend.close()


def _generator(settings: Settings, info: ModelInfo, config: ScoringConfig, generator: str) -> Generator:
    if generator == "vllm":
        from capsel.scoring.vllm_generation import VLLMGenerator, VLLMOptions

        console.print("starting vLLM" + (" in a worker process" if settings.vllm_worker_process else ""))
        return VLLMGenerator(info, config, VLLMOptions(
            gpu_memory_utilization=settings.vllm_gpu_memory_utilization,
            tensor_parallel_size=settings.vllm_tensor_parallel_size, batch_size=settings.vllm_batch_size,
            enforce_eager=settings.vllm_enforce_eager, in_process=not settings.vllm_worker_process,
        ))
    console.print("loading model weights")
    loaded = load_model(info)
    return HFGenerator(loaded, config.horizon, resolve_batch_size(settings.score_batch_size, loaded, config))
