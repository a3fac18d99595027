"""`capsel lab noise`: where injected junk ranks under PPL and under CAP (the paper's noise experiment)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from capsel.cli.common import console, settings_for
from capsel.cli.progress import CandidateProgress
from capsel.cli.scoring_options import ThreadsOption, apply_threads
from capsel.lab.noise.experiment import NoiseSpec, run_noise
from capsel.models import demo_model_path
from capsel.paths import inside_root

_DEFAULT = NoiseSpec()


def noise(
    model: Annotated[Optional[str], typer.Option(
        "--model", help="A model pretrained by `capsel lab pretrain` (default: the bundled demo model).",
        show_default=False)] = None,
    n_clean: Annotated[int, typer.Option(
        "--n-clean", min=6, help="Clean candidates, split over math/code/science, half known and half learnable facts.",
    )] = _DEFAULT.n_clean,
    junk_share: Annotated[float, typer.Option(
        "--junk-share", min=0.0, help="Junk candidates per clean candidate (0.05: 5% junk).")] = _DEFAULT.junk_share,
    seed: Annotated[int, typer.Option("--seed", help="Seed for drawing the pool and its junk.")] = _DEFAULT.seed,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, help="Candidates per scoring batch.")] = 16,
    threads: ThreadsOption = None,
    out: Annotated[Path, typer.Option(
        "--out", help="Folder for pool, DB, noise.json, noise.png (inside the output root).")] = Path("lab_noise"),
) -> None:
    """Score a clean lab pool with 5% junk and report the junk's percentiles among clean candidates."""
    out_dir = inside_root(settings_for().output_root, out)
    source = model or str(demo_model_path())
    apply_threads(threads or settings_for().threads)
    spec = NoiseSpec(n_clean=n_clean, junk_share=junk_share, seed=seed, batch_size=batch_size)
    with CandidateProgress("scoring") as progress:
        result = run_noise(source, spec, out_dir, progress)
    summary = result.summary
    console.print(_ranks_table(summary))
    console.print(_domains_table(summary))
    console.print(_kinds_table(summary))
    console.print(_labels_table(summary))
    for name, count in summary["excluded"].items():
        console.print(f"excluded by the engine: {name}: {count}")
    auc = summary["auc_learnable_over_known"]
    console.print(f"AUC (CAP z of a learnable candidate above a known one): {_fmt(auc, '.3f')}"
                  " (the paper's ordering predicts > 0.5)")
    console.print("wrote " + ", ".join(str(path) for path in result.files.values()))


def _ranks_table(summary: dict) -> Table:
    pooled = summary["pooled"]
    table = Table(title=f"junk percentile among clean candidates ({pooled['cap']['n_junk']} junk, "
                        f"{pooled['cap']['n_clean']} clean; 100 = ranked above every clean one)")
    for column in ("method", "median", "min", "max", "junk < clean p1", "< p5", "< p10", "junk > all clean"):
        table.add_column(column, justify="left" if column == "method" else "right")
    for method, name in (("ppl", "PPL (high first)"), ("cap", "CAP z (high first)")):
        row = pooled[method]
        table.add_row(name, *(_fmt(row[key], ".1f") for key in ("median", "min", "max")),
                      *(_fmt(row[key], ".0%") for key in ("below_p1", "below_p5", "below_p10", "above_all")))
    return table


def _domains_table(summary: dict) -> Table:
    table = Table(title="per domain (junk percentile among that domain's clean candidates)")
    for column in ("domain", "junk", "clean", "PPL median", "CAP median", "CAP: junk < clean p5"):
        table.add_column(column, justify="left" if column == "domain" else "right")
    for domain, methods in summary["per_domain"].items():
        cap = methods["cap"]
        table.add_row(domain, str(cap["n_junk"]), str(cap["n_clean"]), _fmt(methods["ppl"]["median"], ".1f"),
                      _fmt(cap["median"], ".1f"), _fmt(cap["below_p5"], ".0%"))
    return table


def _kinds_table(summary: dict) -> Table:
    table = Table(title="per junk kind (percentile among all clean candidates)")
    for column in ("junk kind", "junk", "PPL median", "CAP median", "CAP min", "CAP max", "CAP: junk < clean p10"):
        table.add_column(column, justify="left" if column == "junk kind" else "right")
    for kind, methods in summary["per_junk_kind"].items():
        cap = methods["cap"]
        table.add_row(kind, str(cap["n_junk"]), _fmt(methods["ppl"]["median"], ".1f"), _fmt(cap["median"], ".1f"),
                      _fmt(cap["min"], ".1f"), _fmt(cap["max"], ".1f"), _fmt(cap["below_p10"], ".0%"))
    return table


def _labels_table(summary: dict) -> Table:
    table = Table(title="by ground-truth label")
    for column in ("label", "candidates", "excluded", "mean CAP z", "median PPL"):
        table.add_column(column, justify="left" if column == "label" else "right")
    for label, row in summary["labels"].items():
        table.add_row(label, str(row["n"]), str(row["n_excluded"]), _fmt(row["mean_z"], "+.3f"),
                      _fmt(row["median_ppl"], ".1f"))
    return table


def _fmt(value: float | None, spec: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return format(value, spec)
