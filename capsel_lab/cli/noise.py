"""`capsel lab noise`: where injected junk ranks under PPL and under CAP (the paper's noise experiment)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Optional, cast, get_args

import typer
from rich.table import Table

from capsel.cli.common import console, settings_for
from capsel.cli.progress import CandidateProgress
from capsel.cli.scoring_options import PromptFormatOption, ThreadsOption, apply_threads
from capsel.cli.tables import print_table
from capsel.cli.wrapping import print_unbroken
from capsel.errors import OptionError
from capsel.models import demo_model_path
from capsel.paths import typed_or_default
from capsel_lab.noise.methods import METHOD_NAMES
from capsel_lab.noise.spec import NoiseSpec, PoolKind

_DEFAULT = NoiseSpec()
SELECTION_NAMES = {**METHOD_NAMES, "random": "random control"}


def noise(
    model: Annotated[Optional[str], typer.Option(
        "--model", help="Model folder or installed name (gemma3-270m, smollm2-135m-instruct); default: the "
        "bundled demo model.", show_default=False)] = None,
    pool: Annotated[Optional[str], typer.Option(
        "--pool", help="world: the synthetic world the model was pretrained on (lab models only); real: GSM8K "
        "and HumanEval rows (default: world for the demo model, real otherwise).", show_default=False)] = None,
    seeds: Annotated[Optional[list[int]], typer.Option(
        "--seeds", help="Seeds of the pool draw and its junk (repeat: --seeds 0 --seeds 1 --seeds 2).",
        show_default=False)] = None,
    n_clean: Annotated[int, typer.Option(
        "--n-clean", min=6, help="world pool: clean candidates, split over math/code/science, half known, half "
        "learnable facts.")] = _DEFAULT.n_clean,
    n_math: Annotated[int, typer.Option("--n-math", min=0, help="real pool: GSM8K train rows.")] = _DEFAULT.n_math,
    n_code: Annotated[int, typer.Option(
        "--n-code", min=0, max=164, help="real pool: HumanEval rows (164 at most).")] = _DEFAULT.n_code,
    junk_share: Annotated[float, typer.Option(
        "--junk-share", min=0.0, help="Junk candidates per clean candidate (0.05: 5% junk).")] = _DEFAULT.junk_share,
    prompt_format: PromptFormatOption = "auto",
    ppl_guard: Annotated[float, typer.Option(
        "--ppl-guard", min=0.0, max=100.0, help="The 'CAP with PPL guard' method: per domain, candidates above "
        "this percentile of PPL are not eligible (as `capsel select --ppl-guard`).")] = _DEFAULT.ppl_guard,
    budget: Annotated[str, typer.Option(
        "--budget", help="Per-domain budget of the selections compared (junk taken by each).")] = _DEFAULT.budget,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, help="Candidates per scoring batch.")] = 16,
    threads: ThreadsOption = None,
    out: Annotated[Optional[Path], typer.Option(
        "--out", help="Folder for one seed-S/ per seed (pool, DB, noise.json, noise.png) and the aggregate "
        "noise.json and junk_percentiles.png (default: lab_noise inside the output root).",
        show_default=False)] = None,
) -> None:
    """Score a clean pool with 5% junk and report where the junk ranks under PPL, CAP and CAP with a PPL guard."""
    settings = settings_for()
    out_dir = typed_or_default(out, settings.output_root, "lab_noise")
    source = model or str(demo_model_path())
    kind = pool or ("world" if model is None else "real")
    if kind not in get_args(PoolKind):
        raise OptionError(f"unknown pool {kind!r}; use world or real")
    apply_threads(threads or settings.threads)
    spec = NoiseSpec(n_clean=n_clean, junk_share=junk_share, batch_size=batch_size, pool=cast(PoolKind, kind),
                     n_math=n_math, n_code=n_code, prompt_format=prompt_format, ppl_guard=ppl_guard, budget=budget)
    from capsel_lab.noise.seeds import run_noise_seeds

    with CandidateProgress("scoring") as progress:
        result = run_noise_seeds(source, spec, seeds or [0], out_dir, lambda seed: progress)
    aggregate = result.aggregate
    print_table(console, _ranks_table(aggregate, len(result.per_seed)))
    print_table(console, _selections_table(aggregate, budget))
    console.print(_exclusions_line(aggregate, ppl_guard))
    for note in dict.fromkeys(aggregate["notes"]):
        console.print(f"[yellow]warning:[/] {note}")
    print_unbroken(console, "wrote " + ", ".join(str(path) for path in result.files.values())
                   + "; per seed: " + ", ".join(str(r.files["figure"]) for r in result.per_seed.values()))


def _ranks_table(aggregate: dict, n_seeds: int) -> Table:
    table = Table(title=f"where the junk ranks among clean candidates (prompt format {aggregate['prompt_format']}; "
                        f"percentile 100 = above every clean one; mean over {n_seeds} seed(s), per seed in brackets)")
    for column in ("method", "junk", "n", "median percentile", "below clean p5", "above clean p95"):
        table.add_column(column, justify="left" if column in ("method", "junk") else "right")
    for name, row in aggregate["ranks"].items():
        method, group = name.split("/", 1)
        table.add_row(METHOD_NAMES[method], group, str(row["n_junk"]), _stat(row["median"], ".1f"),
                      _stat(row["below_p5"], ".0%"), _stat(row["above_p95"], ".0%"))
    return table


def _selections_table(aggregate: dict, budget: str) -> Table:
    table = Table(title=f"junk taken by each selection ({budget} per domain, all seeds summed)")
    for column in ("selection", "members", "junk", "by kind", "clean"):
        table.add_column(column, justify="left" if column in ("selection", "by kind") else "right")
    for method, row in aggregate["selections"].items():
        kinds = ", ".join(f"{kind} {count}" for kind, count in row["junk_by_kind"].items()) or "-"
        table.add_row(SELECTION_NAMES[method], str(row["n_members"]), str(row["n_junk"]), kinds, str(row["n_clean"]))
    return table


def _exclusions_line(aggregate: dict, ppl_guard: float) -> str:
    excluded = ", ".join(f"{name} {count}" for name, count in aggregate["excluded"].items()) or "none"
    return (f"clean rows excluded by the engine: {_stat(aggregate['clean_excluded'], '.1%')} ({excluded}); "
            f"the PPL guard at {ppl_guard:g} holds back {_stat(aggregate['guard']['clean'], '.1%')} of the "
            f"eligible clean rows and {_stat(aggregate['guard']['junk'], '.0%')} of the eligible junk")


def _stat(stat: dict, spec: str) -> str:
    mean = _fmt(stat["mean"], spec)
    if len(stat["per_seed"]) < 2:
        return mean
    return f"{mean} [{' / '.join(_fmt(value, spec) for value in stat['per_seed'])}]"


def _fmt(value: float | None, spec: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return format(value, spec)
