"""`capsel score`: the per-layer divergence profile of every pending candidate (generating y-hat if needed)."""

from __future__ import annotations

from capsel.cli.common import DbOption, console
from capsel.cli.generate import generate_pending
from capsel.cli.progress import CandidateProgress, print_summary
from capsel.cli.scoring_options import (
    BatchSizeOption, DeviceOption, DomainOption, DtypeOption, EarlyOption, GeneratorOption, HorizonOption,
    LateOption, LimitOption, ModelOption, PromptFormatOption, PromptTokensOption, ThreadsOption,
    TrustRemoteCodeOption, check_generator, for_model, model_info, scoring_config, scoring_db, scoring_settings,
)
from capsel.scoring.batch_memory import resolve_batch_size
from capsel.scoring.engine import ScoringEngine
from capsel.models.loading import load_model
from capsel.scoring.runner import run_scoring
from capsel.scoring.store import Scope


def score(
    model: ModelOption = None,
    horizon: HorizonOption = 48,
    prompt_tokens: PromptTokensOption = 256,
    prompt_format: PromptFormatOption = "auto",
    early: EarlyOption = 0.33,
    late: LateOption = 0.66,
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
    """Score candidates that lack a divergence for this model and config; y-hat is generated when missing."""
    check_generator(generator)
    settings = scoring_settings(db, dtype, device, batch_size, threads)
    config = scoring_config(horizon=horizon, prompt_tokens=prompt_tokens, early=early, late=late,
                            prompt_format=prompt_format)
    info = model_info(settings, model, trust_remote_code)
    config = for_model(config, info)
    scope = Scope(domain, limit)
    with scoring_db(settings) as con:
        if generator == "vllm":
            # vLLM generates every missing y-hat first; the HF scorer then finds them all stored.
            print_summary("generate", generate_pending(con, settings, info, config, generator, scope), "generated")
        console.print("loading model weights")
        loaded = load_model(info)
        engine = ScoringEngine(loaded, config, resolve_batch_size(settings.score_batch_size, loaded, config))
        run_config = {"generator": generator, "batch_size": engine.batch_size,
                      "attn_implementation": loaded.model.config._attn_implementation}
        with CandidateProgress("scoring") as progress:
            summary = run_scoring(con, engine, scope, progress, run_config)
        print_summary("score", summary, "scored")
