"""`capsel demo`: the whole selection flow on the bundled lab pool with the bundled demo model, on CPU.

Checks the model's rank profile (warns without the U-shape), stages `capsel/data/lab_pool` (a lab pool
with known and learnable facts, 5% junk, 5% near-duplicates and malformed rows) into a fresh folder,
runs the Prefect `select_flow` in-process (ingest → generate + score → residualize → GX gate →
publish), and prints where the outputs are and what happened to the junk.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Optional

import orjson
import typer
from rich.table import Table

from capsel.cli.common import console, settings_for
from capsel.cli.scoring_options import ThreadsOption, apply_threads
from capsel.demo import PROFILE_DIR, DemoOptions, DemoResult, demo_result, prepare_demo
from capsel.errors import CapselError
from capsel.paths import inside_root
from capsel.profile.check import check_model
from capsel.profile.report import write_profile

DEMO_DIR = "demo"


def demo(
    out: Annotated[Optional[Path], typer.Option(
        "--out", help="Output root; the demo writes (and first empties) <root>/demo (default: $CAPSEL_OUTPUT_ROOT).",
        show_default=False)] = None,
    limit: Annotated[Optional[int], typer.Option(
        "--limit", min=1, help="Take only the first N rows of each domain of the bundled pool (a quick run).",
        show_default=False)] = None,
    budget: Annotated[str, typer.Option("--budget", help="Members per domain: a count or a share like 10%.")] = "10%",
    threads: ThreadsOption = None,
    skip_profile: Annotated[bool, typer.Option(
        "--skip-profile", help="Do not run the rank-profile check of the model first.")] = False,
) -> None:
    """Run the selection flow end to end on the bundled lab pool and say where its outputs are."""
    started = time.perf_counter()
    settings = settings_for(None, output_root=out)
    apply_threads(threads or settings.threads)
    options = DemoOptions(root=inside_root(settings.output_root, DEMO_DIR), per_domain=limit, budget=budget)
    config, records = prepare_demo(options)
    profile_files = [] if skip_profile else _check_profile(options)
    console.rule("select_flow: ingest → generate + score → residualize → gate → publish")
    from flows.select_flow import select_flow  # Prefect only here: the library and `capsel --help` stay light

    state = select_flow(config, return_state=True)
    if not state.is_completed():
        raise CapselError(f"the demo's select_flow ended {state.type.value}: {state.message}")
    result = demo_result(config, state.result(), records)
    _print_result(result, profile_files, time.perf_counter() - started)


def _check_profile(options: DemoOptions) -> list[Path]:
    with console.status(f"rank profile of {options.model.name}"):
        survey, verdict = check_model(options.model)
    files = write_profile(survey, verdict, options.root / PROFILE_DIR)
    if verdict.present:
        console.print(f"rank profile: hidden-state U-shape present ({verdict.reason})")
    else:
        console.print(f"[yellow]warning:[/] the model's hidden states show no U-shape over depth ({verdict.reason}); "
                      "the paper ties CAP's signal to that pattern, so treat its ranks with care "
                      "(capsel/lab/README.md has what the demo model does show)")
    return files


def _print_result(result: DemoResult, profile_files: list[Path], wall_s: float) -> None:
    counts, junk = result.counts, result.junk
    table = Table(title=f"capsel demo: selection {result.selection_id}")
    table.add_column("stage")
    table.add_column("count", justify="right")
    table.add_column("note")
    excluded = ", ".join(f"{reason} {n}" for reason, n in counts["excluded_by_reason"].items()) or "none"
    rows = [
        ("rows read", counts["rows_read"], "bundled lab pool + malformed rows"),
        ("duplicates", counts["duplicates"], "dropped at ingest, each pointing at the row it repeats"),
        ("quarantined", counts["quarantined"], "kept with a reason (`capsel status`)"),
        ("candidates", counts["inserted"], ""),
        ("scored", counts["scored"], "CAP measured"),
        ("excluded", counts["excluded"], excluded),
        ("selected", counts["selected"], f"gate {'passed' if result.gate_success else 'FAILED'}"),
    ]
    for stage, count, note in rows:
        table.add_row(stage, str(count), note)
    console.print(table)
    median = "-" if junk["median_pct"] is None else f"{junk['median_pct']:.1f}"
    below = "-" if junk["below_p10"] is None else f"{junk['below_p10']:.0%}"
    chance = junk["n"] / max(counts["inserted"], 1) * counts["selected"]
    console.print(f"junk: {junk['n']} junk candidates in the pool, {junk['excluded']} excluded by the engine, "
                  f"{junk['selected']} selected (a random draw of the same size takes {chance:.1f} on average); "
                  f"median CAP z percentile among clean candidates {median}, {below} below the clean 10th percentile")
    for name, path in result.paths.items():
        console.print(f"{name:>10}: {path}")
    if profile_files:
        console.print(f"{'profile':>10}: {', '.join(str(path) for path in profile_files)}")
    console.print(f"done in {wall_s / 60:.1f} min")
    console.print_json(orjson.dumps({"counts": counts, "junk": junk}).decode())
