"""`capsel generate`: the model's greedy response y-hat for every pending candidate."""

from __future__ import annotations

from capsel.cap_engine.config import HORIZON, PROMPT_TOKENS
from capsel.cap_engine.generators import check_generator
from capsel.cli.after_commit import committed_work
from capsel.cli.common import DbOption, console
from capsel.cli.progress import CandidateProgress, print_summary
from capsel.cli.scoring_options import (
    AllowPickleOption,
    BatchSizeOption,
    DeviceOption,
    DomainOption,
    DtypeOption,
    GeneratorOption,
    HorizonOption,
    LimitOption,
    ModelOption,
    PromptFormatOption,
    PromptTokensOption,
    ThreadsOption,
    TrustRemoteCodeOption,
    described,
    model_options,
    scoring_db,
    scoring_settings,
)
from capsel.cli.specs import build_spec, spec_values
from capsel.stages.context import RunContext
from capsel.store.scope import Scope


def generate(
    model: ModelOption = None,
    horizon: HorizonOption = HORIZON,
    prompt_tokens: PromptTokensOption = PROMPT_TOKENS,
    prompt_format: PromptFormatOption = "auto",
    dtype: DtypeOption = None,
    device: DeviceOption = None,
    batch_size: BatchSizeOption = None,
    generator: GeneratorOption = "hf",
    trust_remote_code: TrustRemoteCodeOption = False,
    allow_pickle: AllowPickleOption = False,
    threads: ThreadsOption = None,
    domain: DomainOption = None,
    limit: LimitOption = None,
    db: DbOption = None,
) -> None:
    """Generate y-hat (greedy, at most R tokens, stopping before EOS) for candidates that lack one."""
    from capsel.stages.generate import GenerateRequest, yhat_generator
    from capsel.stages.generate import generate as generate_stage

    check_generator(generator)
    settings = scoring_settings(db, dtype, device, batch_size, threads)
    spec = build_spec(spec_values("cap", model_options(settings, model, trust_remote_code, prompt_format, allow_pickle),
                                  prompt_tokens=prompt_tokens, horizon=horizon, batch_size=settings.score_batch_size))
    # The database first: a second writer fails here, before any model file is read.
    with committed_work() as commit:
        with scoring_db(settings) as con:
            scorer = described(spec)
            console.print(f"starting {generator}")
            backend = yhat_generator(generator, settings, scorer)
            with CandidateProgress("generating") as progress:
                summary = generate_stage(GenerateRequest(scorer, backend, Scope(domain, limit)),
                                         RunContext(con, settings, progress))
                commit.done(f"generation run {summary.run_id} committed {summary.n_processed} candidates")
        print_summary("generate", summary, "generated")
