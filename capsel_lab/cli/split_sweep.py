"""`capsel lab split-sweep`: junk ranks under late = the last k blocks and the paper's fraction, stored profiles."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import orjson
import typer
from rich.table import Table

from capsel.cli.common import console, settings_for
from capsel.cli.tables import print_table
from capsel.cli.wrapping import print_unbroken
from capsel.paths import typed_or_default


def split_sweep(
    runs: Annotated[Optional[Path], typer.Option(
        "--runs", help="The folder `capsel lab noise` wrote (its seed-S/ folders hold the scored DB and labelled "
        "scores; default: lab_noise inside the output root).", show_default=False)] = None,
    seeds: Annotated[Optional[list[int]], typer.Option(
        "--seeds", help="Seeds to sweep (repeat; default 0, 1 and 2).", show_default=False)] = None,
    choose_on: Annotated[int, typer.Option(
        "--choose-on", help="The seed k is chosen on; the others only report it.")] = 0,
) -> None:
    """Re-average the stored profiles with late = last:1..last:L/2 and 0.66; choose k on one seed, report the rest."""
    runs_dir = typed_or_default(runs, settings_for().output_root, "lab_noise")
    from capsel_lab.noise.split_sweep import SWEEP_FILE, run_split_sweep

    result = run_split_sweep(runs_dir, seeds or [0, 1, 2], choose_on)
    path = runs_dir / SWEEP_FILE
    path.write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
                                  | orjson.OPT_SERIALIZE_NUMPY))
    print_table(console, _table(result))
    print_unbroken(console, f"late {result['chosen_late']} chosen on seed {result['chosen_on_seed']} (lowest junk "
                            f"median percentile); seeds {', '.join(map(str, result['reported_seeds'])) or 'none'} "
                            f"report it. Wrote {path}")


def _table(result: dict) -> Table:
    seeds = list(result["per_seed"])
    table = Table(title="CAP z: junk median percentile among clean rows / share of junk below every clean row",
                  caption="lower percentile and higher share: CAP ranks the junk lower")
    table.add_column("late")
    table.add_column("blocks", justify="right")
    for seed in seeds:
        mark = " (chooses)" if seed == result["chosen_on_seed"] else ""
        table.add_column(f"seed {seed}{mark}", justify="right")
    by_split: dict[str, dict] = {}
    for seed, rows in result["per_seed"].items():
        for row in rows:
            by_split.setdefault(row["late"], {"blocks": row["late_layers"]})[seed] = row
    for late, cells in by_split.items():
        name = f"{late} *" if late == result["chosen_late"] else late
        blocks = "-".join(map(str, cells["blocks"]))
        table.add_row(name, blocks, *(_cell(cells.get(seed)) for seed in seeds))
    return table


def _cell(row: dict | None) -> str:
    if row is None:
        return ""
    return f"{row['median_pct']:.1f} / {row['below_all']:.0%}"
