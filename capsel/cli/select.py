"""`capsel select`: pick a subset by CAP, a baseline or the seeded random control, gate it and publish it."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from capsel.cli.after_commit import committed_work
from capsel.cli.common import DbOption, JsonOption, LicenseOption, console, json_output, settings_for
from capsel.cli.specs import MethodChoice, methods_help
from capsel.cli.tables import print_table
from capsel.cli.wrapping import print_unbroken
from capsel.dataset_license import DEFAULT_LICENSE
from capsel.db import open_db
from capsel.methods.registry import all_methods
from capsel.methods.registry import method as method_named
from capsel.paths import typed_destination
from capsel.selection.budget import parse_budget
from capsel.selection.plan import Selection, SelectionRequest
from capsel.stages.context import RunContext
from capsel.stages.select import SelectRequest, SelectSummary, select_and_publish
from capsel.terminal_text import TextTable, markup, plain


class DirectionChoice(str, Enum):
    """Which end of the perplexity distribution PPL selection keeps."""

    high = "high"
    low = "low"
    middle = "middle"


def select(
    budget: Annotated[str, typer.Option(
        "--budget", help="Members per domain (or in total): a count like 800 or a share like 10%.",
    )],
    out: Annotated[str, typer.Option(
        "--out", help="Folder that receives <selection_id>/, or a storage URL (s3://bucket/prefix, credentials from "
        "the environment).",
    )],
    total: Annotated[bool, typer.Option(
        "--total/--per-domain",
        help="Split the budget across domains in proportion to their eligible pools, "
        "or apply it in each domain (default, the paper's setting).",
    )] = False,
    domain: Annotated[Optional[list[str]], typer.Option(
        "--domain", help="Only these domains (repeat the option); default: every domain.",
    )] = None,
    method: Annotated[MethodChoice, typer.Option(
        "--method", help=f"{methods_help(all_methods().values())}. Baselines are scored first with "
        "`capsel score-baseline`.",
    )] = MethodChoice("cap"),
    ppl_direction: Annotated[DirectionChoice, typer.Option(
        "--ppl-direction", help="ppl only: keep the highest perplexity (default), the lowest, or the middle band "
        "around the domain median. The paper treats PPL as a difficulty score that ranks high-loss text "
        "(its injected junk) first, so high is its baseline; Marion et al. found middle or low best for "
        "pretraining data, hence the other two.",
    )] = DirectionChoice.high,
    target: Annotated[Optional[Path], typer.Option(
        "--target", help="less only: the target file the LESS scores were computed against "
        "(`capsel score-baseline --method less --target FILE`).", show_default=False,
    )] = None,
    target_max: Annotated[Optional[int], typer.Option(
        "--target-max", min=1, show_default=False,
        help="less only: the --target-max the target was scored with (needed when several were).",
    )] = None,
    ppl_guard: Annotated[Optional[float], typer.Option(
        "--ppl-guard", min=0.0, max=100.0, show_default=False,
        help="cap and random only: within each domain, candidates whose reference PPL (stored by `capsel score`) "
        "lies above this percentile are not eligible, e.g. 95. Off by default, which is the paper's method; on "
        "small models CAP can rank high-perplexity junk near the top (capsel_lab/README.md).",
    )] = None,
    early: Annotated[Optional[str], typer.Option(
        "--early", show_default=False,
        help="cap and random only: the blocks D_early averages, re-averaged in SQL from the per-layer profile "
        "`capsel score` stored (no rescore): a fraction like 0.33 (blocks 1..floor(0.33*L)), first:K, or a "
        "range like 1-8 (1-indexed, inclusive). Default: as scored.",
    )] = None,
    late: Annotated[Optional[str], typer.Option(
        "--late", show_default=False,
        help="cap and random only: the blocks D_late averages, like --early: a fraction like 0.66 (blocks "
        "ceil(0.66*L)..L), last:K (the last K blocks) or a range like 12-18. Default: as scored.",
    )] = None,
    ppl_guard_z: Annotated[Optional[float], typer.Option(
        "--ppl-guard-z", min=0.0, show_default=False,
        help="cap and random only: within each domain, candidates whose log reference PPL lies more than this many "
        "robust standard deviations (1.4826 x MAD) above the domain's median are not eligible, e.g. 3.5. Unlike "
        "--ppl-guard it needs no guess of the junk share; off by default.",
    )] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the random control.")] = 0,
    license_id: LicenseOption = None,
    model: Annotated[Optional[str], typer.Option(
        "--model", help="Fingerprint or name/path of the model (baselines: LM, encoder or rater) whose scores "
        "to use (needed when several are scored).",
    )] = None,
    config_hash: Annotated[Optional[str], typer.Option(
        "--config-hash", help="Scoring config hash of the method to use (needed when several are scored).",
    )] = None,
    json_out: JsonOption = False,
    db: DbOption = None) -> None:
    """Select a subset under a budget, check it with the data-quality gate and publish it."""
    settings = settings_for(db)
    out_dir = typed_destination(out)
    request = SelectionRequest(
        budget=parse_budget(budget, "total" if total else "per_domain"),
        method=method.value,
        domains=tuple(domain) if domain else None,
        seed=seed,
        model=model,
        config_hash=config_hash,
        order=ppl_direction.value if method_named(method.value).ppl == "scores" else None,
        ppl_guard=ppl_guard,
        ppl_guard_z=ppl_guard_z,
        license=DEFAULT_LICENSE if license_id is None else license_id,
        early=early,
        late=late,
    )
    con = open_db(settings.db_path, must_exist=True)
    with json_output(json_out) as output, committed_work() as commit:
        try:
            with _stages() as progress:
                stage = progress.add_task("selecting", total=None)
                summary = select_and_publish(
                    SelectRequest(request, out_dir, target, target_max),
                    RunContext(con, settings, on_step=lambda step: progress.update(stage, description=step)),
                )
                selection, published = summary.selection, summary.published
                commit.done(f"published {published.selection_id} with {len(selection.members)} members at "
                            f"{published.path}")
        finally:
            con.close()
        output.emit({"selection_id": published.selection_id, "path": published.path,
                     "n_members": len(selection.members), "rule": selection.rule, "notes": selection.notes,
                     "manifest": published.manifest, "reconciled": summary.reconciled.as_dict()})
        print_published(summary)


def print_published(summary: SelectSummary) -> None:
    """What the reconcile repaired, the selection's notes, its per-domain table and where it was published."""
    selection, published = summary.selection, summary.published
    for line in summary.reconciled.lines():
        console.print(markup("[yellow]reconcile:[/] {}", line))
    for note in selection.notes:
        console.print(markup("[yellow]note:[/] {}", note))
    print_table(console, _summary(selection, published.manifest))
    print_unbroken(console, markup("published [bold]{}[/] with {} members at {}", published.selection_id,
                                   len(selection.members), published.path))


def _stages() -> Progress:
    return Progress(
        TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=True,
    )


def _summary(selection: Selection, manifest: dict) -> TextTable:
    table = TextTable(title=plain(f"{selection.request.method} selection, budget {selection.request.budget.text}"),
                      caption=plain(selection.rule))
    fitted = bool(selection.fits)
    extra = ("alpha", "beta", "r²", "cut z") if fitted else ("excluded", "last score")
    for name in ("domain", "pool", "k", *extra):
        table.add_column(name, justify="left" if name == "domain" else "right")
    members = selection.members.groupby("domain")["score"].last()
    for entry in manifest["domains"]:
        if fitted:
            cells = [_num(entry.get(name)) for name in ("alpha", "beta", "r2", "z_cut")]
        else:
            last = members.get(entry["domain"])
            cells = [str(entry["n_excluded"]), "" if last is None or last != last else _num(float(last))]
        table.add_row(entry["domain"], str(entry["size"]), str(entry["k"]), *cells)
    return table


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.4g}"
