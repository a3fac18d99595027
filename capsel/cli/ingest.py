"""`capsel ingest`: read pool files into the store, dedup them and quarantine bad rows."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated, Iterator, Optional

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

from capsel.cli.after_commit import committed_work
from capsel.cli.common import DbOption, Interrupted, JsonOption, console, json_output, settings_for
from capsel.cli.flags import flag
from capsel.cli.tables import print_table
from capsel.cli.wrapping import print_unbroken
from capsel.errors import named_fields
from capsel.safe_text import visible
from capsel.terminal_text import TextTable, markup

if TYPE_CHECKING:  # the readers load pyarrow and numpy, which `capsel ingest --help` must not wait for
    from capsel.ingest.inputs import InputFile
    from capsel.ingest.pipeline import ProgressFn
    from capsel.ingest.summary import IngestReport


def ingest(
    paths: Annotated[list[str], typer.Argument(
        help="JSONL, JSON (array), Parquet or CSV files, or folders holding them; also URLs (s3://bucket/prefix/, "
        "gs://..., globs like s3://bucket/pool-*.jsonl) read with credentials from the environment.",
        metavar="PATH", show_default=False,
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
    reingest: Annotated[bool, typer.Option(
        "--reingest", help="For a file already ingested, read its quarantined rows again under these options "
        "(after fixing --map or --domain); its other rows keep their outcome, the old quarantine rows are kept "
        "as history.",
    )] = False,
    dedup_key: Annotated[str, typer.Option(
        "--dedup-key", help="What makes two rows one candidate: `text` (the paper: the normalised instruction and "
        "input; identical questions over different images merge) or `text+images` (the images' sha256s too).",
        metavar="text|text+images",
    )] = "text",
    image_root: Annotated[Optional[list[str]], typer.Option(
        "--image-root", help="A folder or storage prefix rows' images may also be read from (repeatable), besides "
        "each pool file's own folder or prefix; adds to CAPSEL_IMAGE_ROOTS. An image anywhere else is quarantined "
        "as image_refused, unread.", metavar="DIR", show_default=False,
    )] = None,
    json_out: JsonOption = False,
    db: DbOption = None,
) -> None:
    """Ingest pool files: dedup per domain on the normalised instruction+input, quarantine bad rows."""
    from capsel.db import open_db
    from capsel.ingest.image_access import image_access
    from capsel.ingest.inputs import resolve_inputs
    from capsel.ingest.pipeline import IngestOptions
    from capsel.ingest.records import parse_field_map
    from capsel.stages.context import RunContext
    from capsel.stages.ingest import IngestRequest, lost_files_error
    from capsel.stages.ingest import ingest as ingest_stage

    settings = settings_for(db)
    options = IngestOptions(
        domain=domain,
        fields=parse_field_map(field_map or []),
        sample_size=sample,
        seed=seed,
        reingest=reingest,
        max_field_chars=settings.max_field_chars,
        chunk_rows=settings.ingest_chunk_rows,
        workers=settings.ingest_workers,
        dedup_key=dedup_key,  # type: ignore[arg-type]  # IngestOptions checks it against DEDUP_KEY_MODES
        max_image_bytes=settings.max_image_bytes,
        max_image_pixels=settings.max_image_pixels,
        image_access=image_access(settings, image_root or []),
        max_images_per_row=settings.max_images_per_row,
        max_row_image_bytes=settings.max_row_image_bytes,
    )
    resolve_inputs(paths)  # a bad path fails before the database is even created
    con = open_db(settings.db_path, memory_limit=settings.ingest_memory_limit)
    started = time.perf_counter()
    with json_output(json_out) as output:
        with committed_work() as commit:
            try:
                with file_progress() as progress:
                    report = ingest_stage(IngestRequest(paths, options), RunContext(con, settings), progress)
                    commit.done(f"ingest run {report.run_id} committed: {report.totals().n_read:,} rows read")
            except KeyboardInterrupt as exc:
                raise Interrupted(
                    "the file being read was rolled back (the whole run under --sample); files finished before it "
                    "are kept. Rerun the same command to continue."
                ) from exc
            finally:
                con.close()
            seconds = time.perf_counter() - started
            lost = lost_files_error(report)
            if lost is None:
                output.emit(report_json(report, seconds))
            # the error names the hints itself
            print_report(report, seconds, hints=lost is None)
        if lost is not None:
            output.fail(lost, report_json(report, time.perf_counter() - started))


@contextmanager
def file_progress() -> Iterator[ProgressFn]:
    """A rich progress bar per file and step (download, ingest: bytes, rate, ETA), as an ingest progress callback."""
    columns = (
        TextColumn("{task.description}", markup=False), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    tasks: dict[tuple[InputFile, str], TaskID] = {}
    with Progress(*columns, console=console, transient=True) as bar:
        def update(path: InputFile, step: str, done: int, total: int) -> None:
            if (path, step) not in tasks:
                # the file's name is data: markup=False above, its control characters shown
                tasks[path, step] = bar.add_task(visible(f"{step} {path.name}"), total=total)
            bar.update(tasks[path, step], completed=done)
        yield update


def print_report(report: IngestReport, seconds: float, hints: bool = True) -> None:
    """Files ingested, retried or skipped, folder entries not read, per-domain counts that add up to `read`,
    and (`hints`) the --map hints."""
    for outcome in report.files:
        if outcome.n_retried is not None:
            print_unbroken(console, markup(
                "[green]retried[/] {:,} quarantined rows of {} (source {}); {:,} of its {:,} rows are quarantined now",
                outcome.n_retried, outcome.path, outcome.source_id, outcome.n_quarantined, outcome.n_source_rows))
        elif outcome.already_ingested_by:
            print_unbroken(console, markup(
                "[yellow]skipped[/] {}: same sha256 as source {}, already ingested by run {} (--reingest retries its "
                "quarantined rows)", outcome.path, outcome.source_id, outcome.already_ingested_by))
        else:
            print_unbroken(console, markup("[green]ingested[/] {}: {:,} rows (source {}){}", outcome.path,
                                           outcome.n_rows_read, outcome.source_id,
                                           _blank_lines(outcome.n_blank_lines)))
    for skipped in report.skipped:
        print_unbroken(console, markup("[yellow]not read[/] {}: {}", skipped.path, skipped.reason))
    if not report.domains:
        console.print("nothing new to ingest")
        return
    n_read = report.totals().n_read
    console.print(f"{n_read:,} rows in {seconds:.1f} s ({n_read / max(seconds, 1e-9):,.0f} rows/s)")
    sampled = any(d.n_sampled_out for d in report.domains)
    table = TextTable(box=box.SIMPLE_HEAD, title=f"ingest run {report.run_id}", caption=(
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
    for hint in report.hints if hints else ():
        print_unbroken(console, markup("[yellow]hint:[/] {}", named_fields(hint.message(), flag)))


def _blank_lines(n_blank_lines: int) -> str:
    # blank lines are no rows, so they are not in the table's counts: said here, or they would go unseen
    if not n_blank_lines:
        return ""
    return f"; {n_blank_lines:,} blank line{'s' if n_blank_lines != 1 else ''} passed over, no rows"


def report_json(report: IngestReport, seconds: float) -> dict:
    """The run as `capsel ingest --json` prints it: files, per-domain counts, totals and --map hints."""
    return {
        "run_id": report.run_id, "wall_s": round(seconds, 3),
        "files": [{**asdict(outcome), "all_quarantined": outcome.all_quarantined} for outcome in report.files],
        "domains": [asdict(counts) for counts in report.domains], "totals": asdict(report.totals()),
        "hints": [{**asdict(hint), "message": named_fields(hint.message(), flag)} for hint in report.hints],
        "skipped": [{"path": str(skipped.path), "reason": skipped.reason} for skipped in report.skipped],
    }
