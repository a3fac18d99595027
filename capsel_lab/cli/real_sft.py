"""`capsel lab sft --pool real`: each method's selection of a real GSM8K pool fine-tuned and evaluated."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from capsel.cli.common import console, settings_for
from capsel.cli.tables import print_table
from capsel.cli.wrapping import print_unbroken
from capsel.errors import OptionError
from capsel.selection.budget import parse_budget
from capsel.selection.layer_split import parse_blocks
from capsel_lab.real_sft.estimate import estimate
from capsel_lab.real_sft.experiment import METHODS, RealSftSpec, run_real_sft

REAL_MODELS = ("smollm2-135m-instruct", "gemma3-270m")


def run_real(model: str | None, n_pool: int, n_heldout: int, n_gsm8k: int, budget: str, seeds: int,
             profile: str, out_dir: Path, late: str | None = None) -> None:
    """Say how long it will take, run it, print the table and the wall time."""
    if model is None:
        raise OptionError(f"--pool real fine-tunes a real model: name one with --model ({', '.join(REAL_MODELS)})")
    parsed = parse_budget(budget, "per_domain")
    share = float(parsed.percent) / 100 if parsed.percent is not None else (parsed.count or 0) / n_pool
    spec = RealSftSpec(model=model, n_pool=n_pool, n_heldout=n_heldout, n_gsm8k=n_gsm8k, budget=budget,
                       seeds=tuple(range(seeds)), profile=profile, late=late)
    if late is not None:
        parse_blocks(late, "late")
    n_methods = len(spec.method_options())
    guess = estimate(model, n_pool, spec.junk_share, n_heldout, n_gsm8k, share, n_methods, seeds)
    console.print(f"{n_methods} methods + the full pool, {seeds} seeds each, on {n_pool} GSM8K rows + "
                  f"{spec.junk_share:.0%} junk: about {guess.total_s / 60:.0f} min on 2 idle cores (scoring "
                  f"{guess.scoring_s / 60:.0f}, training {guess.training_s / 60:.0f}, evaluation "
                  f"{guess.evaluation_s / 60:.0f}); finished work is kept, so a rerun resumes")
    result = run_real_sft(spec, out_dir, settings_for(), say=lambda line: console.print(line, markup=False,
                                                                                           highlight=False))
    print_table(console, table_of(result.table))
    console.print(f"wall time {result.wall_s / 60:.1f} min (estimated {guess.total_s / 60:.0f})")
    print_unbroken(console, f"wrote {result.path}")


def table_of(rows: list[dict]) -> Table:
    """Held-out loss (and GSM8K when run) per method, mean ± std over seeds, with the junk each selection took."""
    metrics = sorted({key for row in rows for key in row if ":" in key})
    table = Table(title="after SFT: held-out metrics per method (mean ± std over seeds)")
    for name in ("method", "seeds", "rows", "junk", *metrics):
        table.add_column(name, justify="left" if name == "method" else "right")
    for row in rows:
        cells = [f"{row[m]['mean']:.4f} ± {row[m]['std']:.4f}" if row[m]["mean"] is not None else "-"
                 for m in metrics]
        table.add_row(row["method"], str(row["n_seeds"]), _count(row["n_members"]), _count(row["n_junk"]), *cells)
    return table


def _count(value: float) -> str:
    return "" if value != value else f"{value:.0f}"


__all__ = ["METHODS", "run_real", "table_of"]
