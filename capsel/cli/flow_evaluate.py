"""`capsel flow evaluate`: the evaluation flow run here (fine-tune each selection per seed, evaluate, compare)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from capsel.cli.common import DbOption
from capsel.cli.finetune_options import EpochsOption, MinStepsOption
from capsel.finetune.schedule import MIN_STEPS, parse_epochs


def evaluate(
    evals: Annotated[list[str], typer.Option(
        "--eval", help="loss:FILE, gsm8k:FILE or humaneval:FILE (repeatable); a flow reads files only inside the "
        "output root or the incoming folder.", show_default=False)],
    selection: Annotated[Optional[list[str]], typer.Option(
        "--selection", help="Selection id to fine-tune (repeatable; default: the newest of each method and "
        "budget).", show_default=False)] = None,
    model: Annotated[Optional[str], typer.Option(
        "--model", help="Base model (default: $CAPSEL_MODEL).", show_default=False)] = None,
    profile: Annotated[str, typer.Option("--profile", help="Training recipe: cpu-small or paper.")] = "cpu-small",
    seed: Annotated[Optional[list[int]], typer.Option(
        "--seed", help="Training seed (repeatable: one model per seed; default 0).", show_default=False)] = None,
    epochs: EpochsOption = None,
    min_steps: MinStepsOption = MIN_STEPS,
    field_map: Annotated[Optional[str], typer.Option(
        "--map", help="loss files: field renames, e.g. instruction=question,response=answer.")] = None,
    domain: Annotated[Optional[str], typer.Option("--domain", help="loss files: every row's domain.")] = None,
    fewshot: Annotated[Optional[Path], typer.Option(
        "--fewshot", help="gsm8k: file whose first 5 rows are the demonstrations.")] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", min=1, help="gsm8k/humaneval: at most N rows.")] = None,
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens", min=1, help="gsm8k/humaneval.")] = 256,
    base: Annotated[bool, typer.Option("--base/--no-base", help="Evaluate the base model as the reference.")] = True,
    db: DbOption = None,
) -> None:
    """Run the evaluation flow: fine-tune each selection with LlamaFactory, evaluate every model and the base."""
    from capsel.cli.flow_run import run_flow
    from capsel.cli.model_options import validated
    from capsel.evaluation.flow_config import EvaluateFlowConfig  # not for every `capsel flow ... --help`
    from capsel.run_parameters import trust_typed

    trust_typed(db, model)
    body = {
        "selections": selection or [],
        "finetune": {"model": model, "profile": profile, "seeds": seed or [0], "epochs": parse_epochs(epochs),
                     "min_steps": min_steps},
        "evaluation": {"evals": [_absolute(text) for text in evals], "field_map": field_map, "domain": domain,
                       "fewshot_file": str(fewshot.resolve()) if fewshot else None, "limit": limit,
                       "max_new_tokens": max_new_tokens, "include_base": base},
        "db_path": str(db) if db else None,
    }
    config = validated(EvaluateFlowConfig, body)
    from capsel.flows.evaluate_flow import evaluate_flow

    run_flow(evaluate_flow, {"evaluation": config.evaluation, "selections": config.selections,
                             "finetune": config.finetune, "db_path": config.db_path})


def _absolute(spec: str) -> str:
    """KIND:FILE with the file made absolute (the flow resolves relative names against the output root)."""
    kind, sep, path = spec.partition(":")
    return f"{kind}:{Path(path).resolve()}" if sep and path else spec
