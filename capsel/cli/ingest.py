"""`capsel ingest`: read pool files into the store, dedup them and quarantine bad rows."""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Iterator, Optional

import typer
from rich import box
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.table import Table

from capsel.cli.common import DbOption, console, settings_for
from capsel.cli.tables import print_table
from capsel.cli.wrapping import print_unbroken
from capsel.db import open_db
from capsel.ingest.pipeline import IngestOptions, ProgressFn, resolve_inputs
from capsel.ingest.records import parse_field_map
from capsel.ingest.summary import IngestReport
from capsel.stages.context import RunContext
from capsel.stages.ingest import IngestRequest
from capsel.stages.ingest import ingest as ingest_stage


def ingest(
    paths: Annotated[list[Path], typer.Argument(
        help="JSONL, JSON (array), Parquet or CSV files, or folders holding them.", metavar="PATH", show_default=False,
    )],
    domain: Annotated[Optional[str], typer.Option(
        "--domain", help="Domain of every row; overrides a `domain` field in the rows.", show_default=False,
    )] = None,
    field_map: Annotated[Optional[list[str]], typer.Option(
        "--map", help="Source field names, e.g. instruction=problem,response=solution (repeatable).",
        show_default=False,
    )] = None,
    sample: Annotated[Optional[int], typer.Option(
        "--sample", min=1, help="Keep N of this run's new unique candidates per domain (all if fewer).",
        show_default=False,
    )] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the --sample draw.")] = 0,
    db: DbOption = None,
) -> None:
    """Ingest pool files: dedup per domain on the normalised instruction+input, quarantine bad rows."""
    settings = settings_for(db)
    options = IngestOptions(
        domain=domain,
        fields=parse_field_map(field_map or []),
        sample_size=sample,
        seed=seed,
        max_field_chars=settings.max_field_chars,
        chunk_rows=settings.ingest_chunk_rows,
        workers=settings.ingest_workers,
    )
    files = resolve_inputs(paths)  # a bad path fails before the database is even created
    con = open_db(settings.db_path, memory_limit=settings.ingest_memory_limit)
    started = time.perf_counter()
    try:
        with file_progress() as progress:
            report = ingest_stage(IngestRequest(files, options), RunContext(con, settings), progress)
    except KeyboardInterrupt:
        console.print(
            "[yellow]interrupted:[/] the file being read was rolled back (the whole run under --sample); "
            "files finished before it are kept. Rerun the same command to continue."
        )
        raise typer.Exit(130)
    finally:
        con.close()
    print_report(report)
    n_read, seconds = report.totals().n_read, time.perf_counter() - started
    if n_read:
        console.print(f"{n_read:,} rows in {seconds:.1f} s ({n_read / seconds:,.0f} rows/s)")


@contextmanager
def file_progress() -> Iterator[ProgressFn]:
    """A rich progress bar per file (bytes, rate, ETA), as an ingest progress callback."""
    columns = (
        TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    tasks: dict[Path, TaskID] = {}
    with Progress(*columns, console=console, transient=True) as bar:
        def update(path: Path, done: int, total: int) -> None:
            if path not in tasks:
                tasks[path] = bar.add_task(path.name, total=total)
            bar.update(tasks[path], completed=done)
        yield update


def print_report(report: IngestReport) -> None:
    """Files ingested or skipped, then per-domain counts whose columns add up to `read`."""
    for outcome in report.files:
        if outcome.already_ingested_by:
            print_unbroken(console, f"[yellow]skipped[/] {outcome.path}: same sha256 as source {outcome.source_id}, "
                                    f"already ingested by run {outcome.already_ingested_by}")
        else:
            print_unbroken(console, f"[green]ingested[/] {outcome.path}: {outcome.n_rows_read:,} rows "
                                    f"(source {outcome.source_id})")
    if not report.domains:
        console.print("nothing new to ingest")
        return
    sampled = any(d.n_sampled_out for d in report.domains)
    table = Table(box=box.SIMPLE_HEAD, title=f"ingest run {report.run_id}", caption=(
        "read = inserted + duplicates + quarantined" + (" + sampled out" if sampled else "")
    ))
    headers = ["domain", "read", "inserted", "duplicates", "quarantined"] + (["sampled out"] if sampled else [])
    for header in headers:
        table.add_column(header, justify="left" if header == "domain" else "right")
    for counts in [*report.domains, report.totals()]:
        values = [counts.n_read, counts.n_inserted, counts.n_duplicates, counts.n_quarantined]
        values += [counts.n_sampled_out] if sampled else []
        style = "bold" if counts.domain == "total" else None
        table.add_row(counts.domain, *(f"{value:,}" for value in values), style=style)
    print_table(console, table)
