"""`capsel demo`: the whole selection flow on CPU, by default with Gemma 3 270M on real GSM8K/HumanEval rows.

Checks the model's rank profile (warns without the U-shape), stages a cut of the bundled real pool
(5% junk of two kinds, a few near-duplicates, malformed rows) into a fresh folder, runs the Prefect
`select_flow` in-process (ingest → generate + score → residualize → GX gate → publish), then prints
where each kind of junk went under CAP and under PPL, and what each method's selection took.
`--model demo` runs the same on the 2.6M-parameter lab model and its synthetic world.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Annotated, Any, Callable, Optional, TypeVar

import orjson
import typer
from rich.table import Table

from capsel.cli.common import JsonOption, JsonReport, console, json_output, settings_for
from capsel.cli.flow_state import flow_failure
from capsel.cli.prefect_server import use_temporary_server
from capsel.cli.scoring_options import PromptFormatOption, ThreadsOption, apply_threads
from capsel.cli.tables import print_table
from capsel.cli.wrapping import print_unbroken
from capsel.models.installed import installed_model_path
from capsel.paths import typed_or_default
from capsel.publish.funnel import funnel_rows
from capsel.threads import available_cores, busy_elsewhere
from capsel_lab.demo import (
    DEFAULT_MODEL,
    PROFILE_DIR,
    REFERENCE_MACHINE,
    TOY_MODEL,
    DemoOptions,
    DemoResult,
    demo_result,
    prepare_demo,
)
from capsel_lab.noise.methods import METHOD_NAMES

DEMO_DIR, MULTIMODAL_DIR, SUMMARY_FILE = "demo", "demo-multimodal", "demo.json"
T = TypeVar("T")
SELECTION_NAMES = {**METHOD_NAMES, "random": "random control"}


def demo(
    model: Annotated[str, typer.Option(
        "--model", help=f"Installed model name or folder (`capsel models install {DEFAULT_MODEL}` first), or "
        f"'{TOY_MODEL}' for the bundled 2.6M lab model on its synthetic world.")] = DEFAULT_MODEL,
    out: Annotated[Optional[Path], typer.Option(
        "--out", help="Folder the demo writes (and first empties) <out>/demo in (default: the output root, "
        "$CAPSEL_OUTPUT_ROOT).",
        show_default=False)] = None,
    limit: Annotated[Optional[int], typer.Option(
        "--limit", min=1, help="Clean rows per domain (default: 50 for Gemma 3 270M and other models, 107 for "
        "SmolLM2, about 2 minutes of scoring on 2 idle cores; the lab model: its whole pool).",
        show_default=False)] = None,
    budget: Annotated[str, typer.Option("--budget", help="Members per domain: a count or a share like 10%.")] = "10%",
    prompt_format: PromptFormatOption = "auto",
    threads: ThreadsOption = None,
    skip_profile: Annotated[bool, typer.Option(
        "--skip-profile", help="Do not run the rank-profile check of the model first.")] = False,
    multimodal: Annotated[bool, typer.Option(
        "--multimodal", help="Run the flow on a drawn pool of pictures with questions and a tiny random VLM "
        "built from a config (seconds; the path, not the science). --model, --limit and the profile are not "
        "used.")] = False,
    json_out: JsonOption = False,
) -> None:
    """Run the selection flow end to end on a bundled pool and show where the junk went."""
    with json_output(json_out) as output:
        if multimodal:
            _run_multimodal_demo(out, budget, threads, output)
        else:
            _run_demo(model, out, limit, budget, prompt_format, threads, skip_profile, output)


def _run_demo(model: str, out: Path | None, limit: int | None, budget: str, prompt_format: str,
              threads: int | None, skip_profile: bool, output: JsonReport) -> None:
    started = time.perf_counter()
    settings = settings_for()
    # the lab model is tiny: per-op overhead dominates and one thread is fastest (measured 13 vs 1.6 cand/s)
    apply_threads(threads or settings.threads or (1 if model == TOY_MODEL else None))
    # only <out>/demo is emptied, never the folder typed, which may hold the user's own files
    root = typed_or_default(out, settings.output_root, ".") / DEMO_DIR
    options = DemoOptions(root=root, model=model, per_domain=limit, budget=budget, prompt_format=prompt_format)
    installed_model_path(options.model_source)  # a model that is not installed fails before anything is written
    config, records = prepare_demo(options)
    n = sum(1 for record in records if record["lab_label"] != "duplicate")
    estimate = _announce(options, n, not skip_profile)
    steps = StepClock()
    profile_files = [] if skip_profile else steps.time("rank survey", _check_profile, options)
    counters = steps.time("flow", _select, config)
    with console.status("PPL baseline (from CAP's stored PPL) and the compared selections"):
        result = steps.time("comparisons", demo_result, config, counters, records, options)
    summary = write_summary(result)
    wall_s = time.perf_counter() - started
    output.emit({"selection_id": result.selection_id, "gate_success": result.gate_success,
                 **orjson.loads(summary.read_bytes()), "paths": {**result.paths, "summary": summary},
                 "profile": profile_files, "wall_s": round(wall_s, 1),
                 "steps_s": {name: round(seconds, 1) for name, seconds in steps.seconds.items()},
                 "estimated_s": None if estimate is None else round(estimate, 1)})
    _print_result(result, profile_files, summary)
    console.print(steps.line(wall_s, estimate, result.counts["candidates_per_s"]))


def _run_multimodal_demo(out: Path | None, budget: str, threads: int | None, output: JsonReport) -> None:
    from capsel_lab.multimodal_demo import multimodal_demo_result, prepare_multimodal_demo

    started = time.perf_counter()
    settings = settings_for()
    apply_threads(threads or settings.threads or 1)  # a tiny model: per-op overhead dominates, one thread is fastest
    root = typed_or_default(out, settings.output_root, ".") / MULTIMODAL_DIR
    config, records = prepare_multimodal_demo(root, budget)
    console.print(f"demo --multimodal: {len(records)} rows with {len(list((root / 'pool' / 'images').iterdir()))} "
                  "drawn pictures, scored by a tiny random Llava-style VLM")
    result = multimodal_demo_result(config, _select(config))
    summary = write_summary(result)
    output.emit({"selection_id": result.selection_id, "gate_success": result.gate_success,
                 **orjson.loads(summary.read_bytes()), "paths": {**result.paths, "summary": summary},
                 "wall_s": round(time.perf_counter() - started, 1)})
    print_table(console, _funnel_table(result))
    _print_notes_and_paths(result, [], summary)
    console.print(f"took {_minutes(time.perf_counter() - started)}")


def _select(config) -> dict:
    """Run the select flow in-process on a temporary Prefect server; its counters, or a one-line failure."""
    console.rule("select_flow: ingest → generate + score → residualize → gate → publish")
    # Prefect's run lines repeat the level and the flow run's name before each message, which pushes a progress
    # line past 80 columns; the demo's one flow run needs neither, a task's line keeps its task (a user's own
    # Prefect settings still win)
    os.environ.setdefault("PREFECT_LOGGING_FORMATTERS_STANDARD_FLOW_RUN_FMT", "%(asctime)s | %(message)s")
    os.environ.setdefault("PREFECT_LOGGING_FORMATTERS_STANDARD_TASK_RUN_FMT",
                          "%(asctime)s | %(task_run_name)s: %(message)s")
    from capsel.flows.select_flow import select_flow  # Prefect only here: the library and `capsel --help` stay light
    from capsel.run_parameters import trust_typed

    # the demo staged its pool and chose its folders itself: they are this command line's, not a run's
    trust_typed(config.db_path, config.output_root, *config.sources.paths,
                *(model.path for model in config.scoring.models().values()))
    use_temporary_server()
    state = select_flow(**config.parameters(), return_state=True)
    if not state.is_completed():
        raise flow_failure(state, "the demo's select_flow")
    return state.result()


def write_summary(result: DemoResult) -> Path:
    """demo.json beside the demo's database: the counts, where the junk went, the prompt format and the notes."""
    summary = result.paths["selection"].parent.parent / SUMMARY_FILE
    summary.write_bytes(orjson.dumps({"counts": result.counts, "funnel": result.funnel, "junk": result.junk,
                                      "prompt_format": result.prompt_format, "notes": result.notes},
                                     option=orjson.OPT_INDENT_2))
    return summary


def _announce(options: DemoOptions, n: int, survey: bool) -> float | None:
    """Say what the demo will do and how long each step took on the reference machine; returns that total."""
    pool = "lab" if options.toy else "real (GSM8K, HumanEval)"
    pace = options.pace()
    if pace is None:
        console.print(f"demo: {options.model} scores {n} candidates of the bundled {pool} pool (no measured pace "
                      "for this model: its rate shows once scoring starts)")
        return None
    total = pace.seconds(n, survey)
    steps = [f"rank survey {_minutes(pace.survey_s)}"] if survey else []
    steps += [f"Prefect, ingest and model load {_minutes(pace.start_s)}",
              f"scoring {_minutes(n / pace.rate)} at {pace.rate:g} candidates/s",
              f"comparisons {_minutes(pace.compare_s)}"]
    console.print(f"demo: {options.model} scores {n} candidates of the bundled {pool} pool. On {REFERENCE_MACHINE} "
                  f"this took about {_minutes(total)}: {', '.join(steps)}. This machine may be faster or slower; "
                  "the flow logs its own rate as it scores.")
    cores = available_cores()
    if (busy := busy_elsewhere()) >= 0.75:
        # the model's work shares the cores: time scales with the share left, more when nothing is left
        # (only said: the returned estimate stays the reference machine's, which demo.json and the report name)
        slower = cores / max(cores - busy, 0.5)
        console.print(f"note: other processes keep {busy:.1f} of {cores} cores busy here, so expect about "
                      f"{_minutes(total * slower)} ({slower:.1f}x)")
    return total


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


class StepClock:
    """Wall time of each named step the demo runs."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def time(self, name: str, step: Callable[..., T], *args: Any) -> T:
        started = time.perf_counter()
        try:
            return step(*args)
        finally:
            self.seconds[name] = time.perf_counter() - started

    def line(self, wall_s: float, estimate: float | None, rate: float) -> str:
        """`took N min (estimated M): step by step`, the scoring rate included."""
        said = "" if estimate is None else f" (estimated {_minutes(estimate)} from {REFERENCE_MACHINE})"
        steps = ", ".join(f"{name} {_minutes(seconds)}" for name, seconds in self.seconds.items())
        return f"took {_minutes(wall_s)}{said}: {steps}; scored at {rate:.2f} candidates/s"


def _check_profile(options: DemoOptions) -> list[Path]:
    from capsel.profile.check import check_model
    from capsel.profile.report import write_profile

    with console.status(f"rank profile of {options.model}"):
        survey, verdict = check_model(options.model_source, prompt_format=options.prompt_format)
    files = write_profile(survey, verdict, options.root / PROFILE_DIR)
    if verdict.present:
        console.print(f"rank profile: hidden-state U-shape present ({verdict.reason})")
    else:
        console.print(f"[yellow]warning:[/] the model's hidden states show no U-shape over depth ({verdict.reason}); "
                      "the paper ties CAP's signal to that pattern, so treat its ranks with care "
                      "(capsel_lab/README.md has what the demo models do show)")
    return files


def _print_result(result: DemoResult, profile_files: list[Path], summary: Path) -> None:
    print_table(console, _funnel_table(result))
    print_table(console, _ranks_table(result))
    print_table(console, _selections_table(result))
    _print_notes_and_paths(result, profile_files, summary)


def _funnel_table(result: DemoResult) -> Table:
    counts = result.counts
    table = Table(title=f"capsel demo: selection {result.selection_id} (prompt format {result.prompt_format})")
    table.add_column("stage")
    table.add_column("rows", justify="right")
    table.add_column("left", justify="right")
    table.add_column("note")
    junk = f"; {result.junk['n']} junk among the candidates" if result.junk else ""
    notes = {
        "read": f"bundled pool + malformed rows{junk}",
        "duplicate": "dropped at ingest, each pointing at the row it repeats",
        "quarantined": "kept with a reason (`capsel quarantine`)",
        "eligible": f"CAP measured at {counts['candidates_per_s']:.2f} candidates/s",
        "below_cut": "z below the domain's cut",
        "selected": f"gate {'passed' if result.gate_success else 'FAILED'}",
    }
    for (stage, rows, left, reasons), entry in zip(funnel_rows(result.funnel), result.funnel):
        table.add_row(stage, rows, left, "; ".join(note for note in (notes.get(entry["stage"]), reasons) if note))
    return table


def _print_notes_and_paths(result: DemoResult, profile_files: list[Path], summary: Path) -> None:
    for note in result.notes:
        console.print(f"[yellow]note:[/] {note}")
    for name, path in result.paths.items():
        print_unbroken(console, f"{name:>10}: {path}", hang=4)
    if profile_files:
        print_unbroken(console, f"{'profile':>10}: {', '.join(str(path) for path in profile_files)}", hang=4)
    print_unbroken(console, f"{'summary':>10}: {summary}", hang=4)


def _ranks_table(result: DemoResult) -> Table:
    table = Table(title="where the junk ranks among clean candidates (percentile 100 = above every clean one)")
    for column in ("junk", "method", "n", "median pct", "min", "max", "below clean p5", "above clean p95"):
        table.add_column(column, justify="left" if column in ("junk", "method") else "right")
    for group, methods in result.junk["ranks"].items():
        for method, ranks in methods.items():
            table.add_row(group, METHOD_NAMES[method], str(ranks["n_junk"]),
                          *(_fmt(ranks[key], ".1f") for key in ("median", "min", "max")),
                          *(_fmt(ranks[key], ".0%") for key in ("below_p5", "above_p95")))
    return table


def _selections_table(result: DemoResult) -> Table:
    selections = result.junk["selections"]
    table = Table(title=f"junk taken by a {selections['budget']}-per-domain selection "
                        f"(PPL guard at the {selections['ppl_guard']:g}th percentile)")
    for column in ("selection", "members", "junk", "by kind"):
        table.add_column(column, justify="left" if column in ("selection", "by kind") else "right")
    for method, row in selections["methods"].items():
        kinds = ", ".join(f"{kind} {count}" for kind, count in row["junk_by_kind"].items()) or "-"
        table.add_row(SELECTION_NAMES[method], str(row["n_members"]), str(row["n_junk"]), kinds)
    return table


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)
