"""`capsel score`: the per-layer divergence profile of every pending candidate (generating y-hat if needed)."""

from __future__ import annotations

from capsel.cli.after_commit import committed_work
from capsel.cli.common import DbOption, JsonOption, json_output
from capsel.cli.model_options import generated_options
from capsel.cli.progress import CandidateProgress, print_summary, summary_json
from capsel.cli.scoring_options import (
    GENERATION,
    MODEL_RUN,
    EarlyOption,
    Generation,
    LateOption,
    ModelRun,
    described,
    scoring_db,
)
from capsel.cli.specs import build_spec, spec_values
from capsel.stages.context import RunContext


@generated_options(run=MODEL_RUN, generation=GENERATION)
def score(
    *,
    run: ModelRun,
    generation: Generation,
    early: EarlyOption = 0.33,
    late: LateOption = 0.66,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Score candidates that lack a divergence for this model and config; y-hat is generated when missing."""
    from capsel.stages.generate import pre_pass_for, run_pre_pass
    from capsel.stages.score import ScoreRequest
    from capsel.stages.score import score as score_stage

    with json_output(json_out) as output:
        settings = run.settings(db)
        spec = build_spec(spec_values(
            "cap", run.model_part(settings), prompt_tokens=run.prompt_tokens, horizon=generation.horizon,
            early=early, late=late, batch_size=settings.score_batch_size,
        ))
        # The database first: a second writer fails here, before any model file is read.
        with committed_work() as commit:
            with scoring_db(settings) as con:
                scorer = described(spec)
                # vLLM writes every missing y-hat first; the HF scorer then finds them all stored
                pre_pass = pre_pass_for(generation.generator, settings, scorer)
                with CandidateProgress("scoring") as progress:
                    ctx = RunContext(con, settings, progress, run_config={"generator": generation.generator})
                    generated = run_pre_pass(pre_pass, run.scope(), ctx)
                    outcome = score_stage(ScoreRequest(spec, run.scope(), scorer), ctx)
                    commit.done(f"score run {outcome.scoring.run_id} committed {outcome.scoring.n_processed} "
                                "candidates")
            output.emit({
                "model_fingerprint": scorer.identity.fingerprint, "config_hash": scorer.config_hash,
                "prompt_format": scorer.prompt_format,
                "generation": None if generated is None else summary_json(generated),
                "scoring": summary_json(outcome.scoring),
            })
            if generated is not None:
                print_summary("generate", generated, "generated")
            print_summary("score", outcome.scoring, "scored")
