"""`capsel evaluate`: held-out loss and lm-evaluation-harness benchmarks of fine-tuned and base models."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated, Optional

import typer

from capsel.cap_engine.config import PROMPT_TOKENS, ScoringConfig
from capsel.cli.after_commit import committed_work
from capsel.cli.common import DbOption, JsonOption, console, json_output
from capsel.cli.finetune_options import FINETUNING, Finetuning, TrainingBar, trained_line
from capsel.cli.model_options import generated_options
from capsel.cli.progress import EvalBars
from capsel.cli.scoring_options import (
    DeviceOption,
    DtypeOption,
    PromptTokensOption,
    apply_threads,
    checked_settings,
)
from capsel.cli.tables import interval_text, print_table
from capsel.evaluation.eval_files import stage_file, staging_folder
from capsel.evaluation.eval_spec import parse_eval_spec
from capsel.evaluation.options import EvalOptions
from capsel.ingest.records import parse_field_map
from capsel.stages.context import RunContext
from capsel.terminal_text import TextTable, plain


@generated_options(tuning=FINETUNING)
def evaluate(
    targets: Annotated[list[str], typer.Argument(
        help="What to evaluate: a fine-tune id (`capsel finetune`), a selection id (fine-tuned first with "
        "--model, --profile, --config and --seed) or base:MODEL (the model before SFT).", show_default=False)],
    evals: Annotated[list[str], typer.Option(
        "--eval", help="loss:FILE (held-out loss on instruction/response rows, any file ingest reads), "
        "gsm8k:FILE (lm-evaluation-harness, 5 demonstrations from --fewshot, strict match after ####) or "
        "humaneval:FILE (pass@1 by execution: needs --allow-code-execution). Repeatable.", show_default=False)],
    field_map: Annotated[Optional[list[str]], typer.Option(
        "--map", help="loss files: source field names, e.g. instruction=question,response=answer (as ingest).",
        show_default=False)] = None,
    domain: Annotated[Optional[str], typer.Option(
        "--domain", help="loss files: every row's domain (default: each row's domain field, else 'all').",
        show_default=False)] = None,
    prompt_tokens: PromptTokensOption = PROMPT_TOKENS,
    fewshot: Annotated[Optional[Path], typer.Option(
        "--fewshot", help="gsm8k: the file whose first 5 rows are the demonstrations.", show_default=False,
        exists=True, dir_okay=False)] = None,
    limit: Annotated[Optional[int], typer.Option(
        "--limit", min=1, help="gsm8k and humaneval: evaluate at most this many rows (for a CPU).",
        show_default=False)] = None,
    max_new_tokens: Annotated[int, typer.Option(
        "--max-new-tokens", min=1, help="gsm8k and humaneval: most tokens generated per answer.")] = 256,
    allow_code_execution: Annotated[bool, typer.Option(
        "--allow-code-execution", help="humaneval: run the model's code against the tests, each program in a "
        "bubblewrap sandbox (no network, no writes outside its folder, its own processes only, limits and a "
        "timeout); refused where the sandbox cannot start.")] = False,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, help="Rows per model batch.")] = 8,
    *,
    tuning: Finetuning,
    dtype: DtypeOption = None,
    device: DeviceOption = None,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Evaluate fine-tuned or base models; every metric is stored (`capsel evaluations`) and reused when asked again."""
    from capsel.db import open_db  # duckdb: not for --help

    with json_output(json_out) as output:
        settings = checked_settings(db, dtype, device, None)
        out_root = tuning.out_root(settings)
        # each file is read once, now, before torch loads: what the evaluation reads later is this copy
        staging = staging_folder(out_root)
        specs = tuple(parse_eval_spec(text, staging) for text in evals)
        fewshot = stage_file(fewshot, staging, "[[fewshot]]")[0] if fewshot is not None else None
        apply_threads(settings.threads)
        from capsel.stages.evaluate import EvaluateRequest  # loads torch: after every input was checked
        from capsel.stages.evaluate import evaluate as evaluate_stage
        options = EvalOptions(
            fields=parse_field_map(field_map or []), domain=domain,
            scoring=ScoringConfig(prompt_tokens=prompt_tokens, prompt_format=tuning.prompt_format),
            batch_size=batch_size, fewshot_file=fewshot, limit=limit, max_new_tokens=max_new_tokens,
            allow_code_execution=allow_code_execution, dtype=settings.dtype, device=settings.device,
        )
        # a base model can be evaluated before any pool exists, so the database may be new
        con = open_db(settings.db_path)
        with committed_work() as commit:
            try:
                ctx = RunContext(con, settings)
                resolved = [_finetuned_if_selection(ctx, target, tuning) for target in targets]
                with EvalBars() as bars:
                    summary = evaluate_stage(EvaluateRequest(tuple(resolved), specs, out_root, options),
                                             replace(ctx, on_count=bars.update, on_notice=bars.notice))
                    commit.done(f"evaluation run {summary.run_id} stored {len(summary.results)} results")
            finally:
                con.close()
            output.emit({"results": [result.as_dict() for result in summary.results], "run_id": summary.run_id})
            print_table(console, _table(summary.results))


def _finetuned_if_selection(ctx: RunContext, target: str, tuning: Finetuning) -> str:
    """A selection id becomes the id of the model fine-tuned on it; other targets stay as given."""
    from capsel.evaluation.targets import BASE_PREFIX
    from capsel.stages.finetune import finetune_selection

    if target.startswith(BASE_PREFIX) or not target.startswith("sel-"):
        return target
    request = tuning.request(target, ctx.settings)
    with TrainingBar(f"fine-tuning on {target}") as bar:
        summary = finetune_selection(request, replace(ctx, on_training=bar.callback))
    console.print(plain(f"{target}: {'reused' if summary.reused else 'trained'} {summary.finetune_id}"))
    trained = trained_line(summary.manifest)
    if trained:
        console.print(plain(trained))
    return summary.finetune_id


def _table(results: list) -> TextTable:
    table = TextTable(title="evaluations")
    for name in ("target", "eval", "domain", "metric", "value", "95% CI", "n", "tokens", ""):
        table.add_column(name, justify="left" if name in ("target", "eval", "domain", "metric") else "right")
    for result in results:
        table.add_row(result.target, result.eval, result.domain, result.metric, f"{result.value:.4f}",
                      interval_text(result.ci95), str(result.n), "" if result.tokens is None else str(result.tokens),
                      "stored" if result.reused else "")
    return table
