"""`capsel lab sft`: fine-tune the demo model on CAP-top vs random subsets of one budget, test on held-out questions."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from capsel.cli.common import console, settings_for
from capsel.cli.progress import THREADS_HELP, CandidateProgress
from capsel.cli.tables import print_table
from capsel.cli.wrapping import print_unbroken
from capsel.errors import CapselError, OptionError
from capsel.models import demo_model_path
from capsel.paths import typed_or_default
from capsel.selection.budget import parse_budget
from capsel_lab.sft.spec import SftSpec

_DEFAULT = SftSpec()
# --quick: a pool of 48, two tiny budgets, two seeds, 8 steps, 30 held-out questions (the test's setting)
_QUICK = SftSpec(budgets=("2", "4"), n_seeds=2, n_clean=48, junk_share=0.125,
                 finetune=replace(_DEFAULT.finetune, steps=8, warmup_steps=2, batch_size=4), max_heldout=30)


def sft(
    model: Annotated[Optional[str], typer.Option(
        "--model", help="A model pretrained by `capsel lab pretrain` (default: the bundled demo model).",
        show_default=False)] = None,
    budgets: Annotated[Optional[str], typer.Option(
        "--budgets", help="2 or 3 comma-separated budgets per domain, counts or shares (default 5%,15%).",
        show_default=False)] = None,
    seeds: Annotated[Optional[int], typer.Option("--seeds", min=1, help="Seeds per budget and method (default 3).",
                                                 show_default=False)] = None,
    steps: Annotated[Optional[int], typer.Option("--steps", min=1, help="Fine-tuning steps of every run (default 60).",
                                                 show_default=False)] = None,
    n_clean: Annotated[Optional[int], typer.Option(
        "--n-clean", min=6, help="Clean candidates in the lab pool (default 600; 5% junk is added).",
        show_default=False)] = None,
    quick: Annotated[bool, typer.Option("--quick", help="A tiny setting that runs in seconds (for tests).")] = False,
    pool: Annotated[str, typer.Option(
        "--pool", help="world: the lab model on its synthetic world (this command's original experiment); real: "
        "a real model (--model smollm2-135m-instruct or gemma3-270m) on GSM8K train rows + 5% junk: `capsel pilot`'s "
        "design on them (each method against the median of random draws, Holm over the comparisons).")
    ] = "world",
    n_pool: Annotated[int, typer.Option("--n-pool", min=20, help="real pool: clean GSM8K rows of each pool.")] = 200,
    pools: Annotated[int, typer.Option(
        "--pools", min=1, help="real pool: replicates, disjoint draws of the bundled rows (the pilot's sub-pools)."
    )] = 3,
    first_pool: Annotated[int, typer.Option("--first-pool", min=0, help="real pool: the draw's seed.")] = 0,
    junk_share: Annotated[float, typer.Option(
        "--junk-share", min=0.0, max=1.0, help="real pool: junk rows per clean row (0: the junk-free arm, which "
        "tests the ranking of clean rows apart from junk avoidance).")] = 0.05,
    random_draws: Annotated[int, typer.Option(
        "--random-draws", min=1, help="real pool: random subsets per pool and budget; each method meets their "
        "median.")] = 5,
    n_heldout: Annotated[int, typer.Option("--n-heldout", min=10, help="real pool: held-out rows for the loss.")] = 100,
    profile: Annotated[str, typer.Option("--profile", help="real pool: the training recipe.")] = "cpu-small",
    allow_dirty: Annotated[bool, typer.Option(
        "--allow-dirty", help="real pool: record a run of uncommitted code by its diff's hash.")] = False,
    threads: Annotated[int, typer.Option("--threads", min=1, help=THREADS_HELP)] = 1,
    out: Annotated[Optional[Path], typer.Option(
        "--out", help="Folder for the pool DB, sft.json and sft.png (default: lab_sft inside the output root).",
        show_default=False)] = None,
) -> None:
    """Fine-tune on CAP-selected and random subsets (same budget, seed, steps, schedule); print held-out accuracy."""
    import torch

    if pool == "real":
        from capsel_lab.cli.real_sft import run_real
        from capsel_lab.real_sft.preset import RealLab

        if seeds is not None or steps is not None or quick:
            raise OptionError("--seeds, --steps and --quick are for --pool world; a real lab replicates pools "
                              "(--pools) and trains with LlamaFactory's --profile (`capsel pilot --quick` is the "
                              "quick one)")
        lab = RealLab(model=model or "", pools=pools, seed=first_pool, n_pool=n_pool, n_heldout=n_heldout,
                      junk_share=junk_share, budgets=tuple((budgets or "10%").split(",")), random_draws=random_draws,
                      profile=profile, allow_dirty=allow_dirty)
        default = Path("lab_sft_real") / f"{Path(lab.model).name}-junk{junk_share:g}"
        torch.set_num_threads(threads)
        run_real(lab, typed_or_default(out, settings_for().output_root, default))
        return
    if pool != "world":
        raise CapselError(f"--pool is world or real, not {pool!r}")
    out_dir = typed_or_default(out, settings_for().output_root, "lab_sft")
    spec = _spec(quick, budgets, seeds, steps, n_clean)
    from capsel_lab.sft.experiment import run_sft

    source = model or str(demo_model_path())
    torch.set_num_threads(threads)
    with CandidateProgress("scoring the pool") as progress:
        n_runs = 1 + (2 * len(spec.budgets) + 1) * spec.n_seeds
        done = {"n": 0}

        def report(row: dict) -> None:
            done["n"] += 1
            console.print(f"[{done['n']}/{n_runs}] {row['budget']} {row['method']} seed {row['seed']}: "
                          f"{row['n_train']} examples ({row['n_junk']} junk), accuracy {row['accuracy']:.3f}")

        result = run_sft(source, spec, out_dir, progress, report)
    print_table(console, _table(result.table))
    console.print("correct = the held-out question's expected answer (a number, word or value) occurs as a whole "
                  "word in the model's greedy answer; held-out questions ask the pool's facts in another form")
    print_unbroken(console, "wrote " + ", ".join(str(path) for path in result.files.values()))


def _spec(quick: bool, budgets: str | None, seeds: int | None, steps: int | None, n_clean: int | None) -> SftSpec:
    spec = _QUICK if quick else _DEFAULT
    if budgets is not None:
        values = tuple(part.strip() for part in budgets.split(",") if part.strip())
        if not 2 <= len(values) <= 3:
            raise CapselError(f"--budgets needs 2 or 3 values, got {len(values)}: {budgets!r}")
        for value in values:
            parse_budget(value, "per_domain")
        spec = replace(spec, budgets=values)
    if seeds is not None:
        spec = replace(spec, n_seeds=seeds)
    if steps is not None:
        finetune = replace(spec.finetune, steps=steps, warmup_steps=min(spec.finetune.warmup_steps, steps))
        spec = replace(spec, finetune=finetune)
    if n_clean is not None:
        spec = replace(spec, n_clean=n_clean)
    return spec


def _table(rows: list[dict]) -> Table:
    table = Table(title="held-out accuracy after SFT (mean ± std over seeds)")
    for column in ("budget / domain", "method", "seeds", "examples", "junk in set", "learnable in set",
                   "accuracy", "known facts", "learnable facts"):
        table.add_column(column, justify="left" if column in ("budget / domain", "method") else "right")
    for row in rows:
        table.add_row(row["budget"], row["method"], str(row["n_seeds"]), f"{row['n_train_mean']:.0f}",
                      f"{row['n_junk_mean']:.1f}", f"{row['n_learnable_mean']:.1f}", _pm(row, "accuracy"),
                      _pm(row, "accuracy_known"), _pm(row, "accuracy_learnable"))
    return table


def _pm(row: dict, metric: str) -> str:
    mean = row[f"{metric}_mean"]
    return "-" if mean is None else f"{mean:.3f} ± {row[f'{metric}_std']:.3f}"
