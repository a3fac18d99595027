"""`capsel pilot`: which method, at which budget, for this model and this pool, with evidence."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from capsel.cli.common import JsonOption, console, json_output, settings_for
from capsel.cli.model_options import OptionGroup, generated_options, validated
from capsel.cli.wrapping import print_unbroken
from capsel.pilot.spec import QUICK, PilotSpec
from capsel.terminal_text import plain

DESIGN = OptionGroup(PilotSpec, skip=frozenset({"pool"}))


@generated_options(design=DESIGN)
def pilot(
    pool: Annotated[Path, typer.Argument(help="The pool: any file `capsel ingest` reads, or a capsel store "
                                         "(.duckdb) whose candidates are the pool.", exists=True,
                                         dir_okay=False, show_default=False)],
    design: dict[str, Any],
    quick: Annotated[bool, typer.Option(
        "--quick", help="A pilot of minutes to see the design run end to end: 2 sub-pools, budget 50%, cap against "
        "2 random draws, 10 held-out rows, 2 steps (options given beside it win).")] = False,
    out: Annotated[Optional[Path], typer.Option(
        "--out", help="The pilot's folder (default: <output root>/pilots/<pilot id>); a rerun resumes it.",
        show_default=False)] = None,
    json_out: JsonOption = False,
) -> None:
    """Which method, at which budget, for this model and pool: replicated selections fine-tuned and evaluated
    against the median of random draws, with corrected evidence.

    The pool is drawn into disjoint sub-pools and held-out rows; each sub-pool is selected by every method at every
    budget, each selection fine-tuned (every method at one budget trains the same steps) and evaluated, and each
    method compared with the median random draw, across sub-pools with Holm's correction.

    The last line printed is the report's page (with --json: one object with the decisions and every cell).
    """
    from capsel.cli.pilot_progress import PilotBars  # rich bars: not for --help
    from capsel.pilot.parameters import run_folder
    from capsel.pilot.run import pilot_id, run_pilot

    settings = settings_for()
    spec = validated(PilotSpec, {**(QUICK if quick else {}), **design, "pool": str(pool.absolute())},
                     "pilot options")
    folder = out or run_folder(settings, pilot_id(spec))
    with json_output(json_out) as output:
        with PilotBars() as bars:
            result = run_pilot(spec, folder.absolute(), settings, bars.events())
        output.emit({key: result[key] for key in ("ok", "decisions", "cells", "report", "rows")})
        for decision in result["decisions"]:
            console.print(plain(f"{decision['budget']}: {decision['verdict']} (p {decision['p']:.4f}, Holm "
                                f"{decision['p_adjusted']:.4f}, least reachable {decision['p_floor']:.4f})"))
        estimate = result["estimate"]
        console.print(plain(f"predicted {estimate['predicted']['total_s'] / 60:.1f} min, took "
                            f"{estimate['actual']['total_s'] / 60:.1f} min (every run of this pilot)"))
        if not json_out:
            print_unbroken(console, plain(result["report"]))
