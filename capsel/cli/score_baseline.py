"""`capsel score-baseline`: score the pool for one baseline method (ppl, ifd, qurating, kcenter, less)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import orjson
import typer

from capsel.cap_engine.config import HORIZON
from capsel.cli.after_commit import committed_work
from capsel.cli.common import DbOption, console
from capsel.cli.model_options import generated_options
from capsel.cli.progress import CandidateProgress, print_summary
from capsel.cli.scoring_options import MODEL_RUN, ModelRun, described, scoring_db
from capsel.cli.specs import BaselineChoice, build_spec, spec_values
from capsel.errors import OptionError
from capsel.methods.less import TARGET_MAX
from capsel.methods.registry import baseline_methods, methods_help
from capsel.methods.registry import method as method_named
from capsel.methods.spec import MethodSpec
from capsel.stages.context import RunContext
from capsel.terminal_text import plain


@generated_options(run=MODEL_RUN)
def score_baseline(
    method: Annotated[BaselineChoice, typer.Option(
        "--method", help=methods_help(baseline_methods()) + ".",
    )],
    run: ModelRun,
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
        help="Token window: ifd and less 1024 (\\[prompt; response]), qurating 512, kcenter 256 (the paper's values).",
    )] = None,
    horizon: Annotated[int, typer.Option("--horizon", help="ppl: R, keep the first R response tokens.")] = HORIZON,
    *,
    db: DbOption = None,
) -> None:
    """Score candidates that have no result yet for this method, scorer and config (resumable).

    ppl reuses the PPL that `capsel score` stored when CAP was scored with the same model and limits.
    less follows the paper: rank-8 LoRA (alpha 16, dropout 0) on q/k/v/o with no warmup training, so
    LoRA B is zero and only the B blocks have nonzero gradients; per example, the response-only loss
    gradient is CountSketched to 8,192 dims and unit-normalised. Features are stored and reused by
    every later --target.
    """
    from capsel.stages.score import ScoreRequest
    from capsel.stages.score import score as score_stage

    name = method.value
    declared = method_named(name)
    if target is not None and declared.target is None:
        raise OptionError(f"--target applies to {_targeting_methods()} only")
    settings = run.settings(db)
    field = declared.model_field()
    model_path = {"rater": rater, "encoder": encoder}.get(field or "", run.model or settings.model)
    model_path = str(model_path) if model_path else None
    # options with a default of their own go to the methods whose spec has them; the others are checked by it
    defaulted = {"rater_label": rater_label, "prompt_tokens": run.prompt_tokens, "horizon": horizon,
                 "target_max": target_max}
    spec = build_spec(spec_values(
        name, {**run.model_part(settings), "path": model_path},
        **_spec_options(declared.spec, defaulted), max_length=max_length, target=str(target) if target else None,
        batch_size=_batch_size(declared, run.batch_size, settings.score_batch_size),
    ))
    # The database first: a second writer fails here, before any model file is read.
    with committed_work() as commit:
        with scoring_db(settings) as con:
            scorer = described(spec)
            console.print(f"{name}: {declared.summary}")
            with CandidateProgress(f"{name} scoring") as progress:
                outcome = score_stage(ScoreRequest(spec, run.scope(), scorer=scorer),
                                      RunContext(con, settings, progress))
                commit.done(f"{name} score run {outcome.scoring.run_id} committed {outcome.scoring.n_processed} "
                            "candidates")
        extra = {declared.reused_as: outcome.scoring.n_reused} if declared.reused_as else {}
        print_summary(f"score-baseline {name}", outcome.scoring, declared.counted_as, extra)
        if declared.target is not None:
            _print_target(outcome.target, name, target)


def _spec_options(spec: type[MethodSpec] | None, options: dict) -> dict:
    """The options that are fields of `spec`; the others belong to other methods."""
    assert spec is not None  # score-baseline offers scored methods only
    return {key: value for key, value in options.items() if key in spec.model_fields}


def _targeting_methods() -> str:
    return ", ".join(f"--method {declared.name}" for declared in baseline_methods() if declared.target is not None)


def _print_target(scored, name: str, target: Path | None) -> None:
    if scored is None:
        console.print("no --target: features stored; pass --target FILE to score them against a target set")
        return
    stored = scored.target
    how = "computed" if scored.target_computed else "reused (stored)"
    excluded = orjson.loads(stored["excluded"] or "{}")
    console.print(plain(
        f"target {stored['target_fingerprint']} {how}: {stored['n_used']} of {stored['n_examples']} examples "
        f"featured{f' (excluded: {excluded})' if excluded else ''}; {scored.n_scores_written} candidate scores "
        f"written (select with --method {name} --target {target})"
    ))


def _batch_size(declared, given: str | None, setting: int | str) -> int | None:
    """--batch-size, else the setting; a method whose spec sizes its own batches (k-center's 256, a small
    encoder) keeps that unless given one."""
    spec = declared.spec
    own = spec is not None and spec.model_fields["batch_size"].default != MethodSpec.model_fields["batch_size"].default
    value = given or (None if own else setting)
    return None if value in (None, "auto") else int(value)
