"""`capsel lab sft --pool real`: each method's selection of fresh real GSM8K pools fine-tuned and evaluated."""

from __future__ import annotations

from pathlib import Path

from capsel.cli.common import console, settings_for
from capsel.cli.tables import interval_text, print_table
from capsel.cli.wrapping import print_unbroken
from capsel.errors import OptionError
from capsel.selection.layer_split import parse_blocks
from capsel.terminal_text import TextTable
from capsel_lab.real_sft.estimate import estimate
from capsel_lab.real_sft.spec import RealSftSpec

REAL_MODELS = ("smollm2-135m-instruct", "gemma3-270m")


def run_real(spec: RealSftSpec, out_dir: Path) -> None:
    """Say how long the work left will take, run it, print the tables and the wall time."""
    if not spec.model:
        raise OptionError(f"--pool real fine-tunes a real model: name one with --model ({', '.join(REAL_MODELS)})")
    if spec.late is not None:
        parse_blocks(spec.late, "late")
    guess = estimate(spec, out_dir)
    n_methods = len(spec.method_options())
    console.print(f"{spec.pools} pools of {spec.n_pool} GSM8K rows + {spec.junk_share:.0%} junk, {n_methods} methods "
                  f"each, {spec.null_draws} more random subsets on pool {spec.first_pool}: about "
                  f"{guess.total_s / 60:.0f} min left on 2 idle cores (scoring {guess.scoring_s / 60:.0f}, training "
                  f"{guess.training_s / 60:.0f}, evaluation {guess.evaluation_s / 60:.0f}); finished work is kept, "
                  "so a rerun resumes")
    from capsel_lab.real_sft.experiment import run_real_sft

    result = run_real_sft(spec, out_dir, settings_for(), say=lambda line: console.print(line, markup=False,
                                                                                          highlight=False))
    summary = result.summary
    print_table(console, methods_table(summary["methods"]))
    print_table(console, deltas_table(summary["comparisons"]))
    if summary["null"] is not None:
        null = summary["null"]
        console.print(f"CAP's model ranks {null['rank']} of {null['n_random'] + 1} among {null['n_random']} random "
                      f"subsets of pool {null['pool_seed']} (rank 1: lowest loss; p = {null['p']:.3f})")
    console.print(f"wall time {summary['wall_s'] / 60:.1f} min over {len(summary['runs_wall_s'])} run(s) "
                  f"(estimated {guess.total_s / 60:.0f} for this one)")
    print_unbroken(console, f"wrote {result.path}")


def methods_table(rows: list[dict]) -> TextTable:
    """Held-out loss per method, mean ± std over pools, with the rows, junk and response tokens each selected."""
    table = TextTable(title="held-out loss per method over pools (mean ± std; each pool a fresh draw)")
    for name in ("method", "pools", "rows", "junk", "response tokens", "loss"):
        table.add_column(name, justify="left" if name == "method" else "right")
    for row in rows:
        counts = [f"{row[key]:.1f}" if key in row else "" for key in
                  ("n_members_mean", "n_junk_mean", "response_tokens_mean")]
        table.add_row(row["method"], str(row["n_pools"]), *counts, f"{row['loss_mean']:.4f} ± {row['loss_std']:.4f}")
    return table


def deltas_table(rows: list[dict]) -> TextTable:
    """Each paired delta per pool (with its bootstrap CI) and across pools (sign test, paired t-test)."""
    table = TextTable(title="paired deltas of held-out loss (method - against; below 0: the method's model is better)")
    for name in ("method", "against", "per pool: delta [95% CI]", "better / worse", "mean", "sign test p",
                 "t-test p"):
        table.add_column(name, justify="left" if name in ("method", "against", "per pool: delta [95% CI]")
                         else "right")
    for row in rows:
        per_pool = "; ".join(f"{pool['pool_seed']}: {pool['delta']:+.4f} {interval_text(pool['ci95'])}"
                             for pool in row["pools"])
        t_p = "" if row["t_test_p"] is None else f"{row['t_test_p']:.3f}"
        table.add_row(row["method"], row["against"], per_pool, f"{row['n_better']} / {row['n_worse']}",
                      f"{row['mean_delta']:+.4f}", f"{row['sign_test']['p']:.3f}", t_p)
    return table
