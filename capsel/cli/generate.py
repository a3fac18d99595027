"""`capsel generate`: the model's greedy response y-hat for every pending candidate."""

from __future__ import annotations

from capsel.cli.after_commit import committed_work
from capsel.cli.common import DbOption, console
from capsel.cli.model_options import generated_options
from capsel.cli.progress import CandidateProgress, print_summary
from capsel.cli.scoring_options import GENERATION, MODEL_RUN, Generation, ModelRun, described, scoring_db
from capsel.cli.specs import build_spec, spec_values
from capsel.stages.context import RunContext


@generated_options(run=MODEL_RUN, generation=GENERATION)
def generate(*, run: ModelRun, generation: Generation, db: DbOption = None) -> None:
    """Generate y-hat (greedy, at most R tokens, stopping before EOS) for candidates that lack one."""
    from capsel.stages.generate import GenerateRequest, yhat_writer
    from capsel.stages.generate import generate as generate_stage

    settings = run.settings(db)
    spec = build_spec(spec_values("cap", run.model_part(settings), prompt_tokens=run.prompt_tokens,
                                  horizon=generation.horizon, batch_size=settings.score_batch_size))
    # The database first: a second writer fails here, before any model file is read.
    with committed_work() as commit:
        with scoring_db(settings) as con:
            scorer = described(spec)
            console.print(f"starting {generation.generator}")
            writer = yhat_writer(generation.generator, settings, scorer)
            with CandidateProgress("generating") as progress:
                summary = generate_stage(GenerateRequest(writer, run.scope()),
                                         RunContext(con, settings, progress))
                commit.done(f"generation run {summary.run_id} committed {summary.n_processed} candidates")
        print_summary("generate", summary, "generated")
