"""Stage: read pool files into the store as one run: dedup per domain, quarantine bad rows, sample if asked."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from capsel.errors import CapselError
from capsel.ingest.inputs import InputFile
from capsel.ingest.pipeline import IngestOptions, ProgressFn
from capsel.ingest.pipeline import ingest as ingest_files
from capsel.ingest.summary import IngestReport
from capsel.stages.context import RunContext


@dataclass(frozen=True)
class IngestRequest:
    """The files (or folders of them) to read and how their rows become candidates."""

    paths: Sequence[str | InputFile]  # local paths, storage URLs, or the objects a listing found
    options: IngestOptions


def ingest(request: IngestRequest, ctx: RunContext, progress: ProgressFn | None = None) -> IngestReport:
    """Ingest the files as one 'ingest' run, recorded under the context's flow run when there is one."""
    return ingest_files(ctx.con, request.paths, request.options, progress,
                        parent_run_id=ctx.parent_run_id, prefect_flow_run_id=ctx.prefect_flow_run_id)


def kept_nothing(report: IngestReport) -> bool:
    """Every file this run read lost all its rows to quarantine: a pool run on from here would lack them all."""
    read = [outcome for outcome in report.files if outcome.n_rows_read]
    return bool(read) and all(outcome.all_quarantined for outcome in read)


def lost_files_error(report: IngestReport) -> CapselError | None:
    """The error of a run that quarantined every row of a file (None when each file kept a row), naming the files
    and the fields hint. The run is committed either way; `capsel ingest` exits with this error, and a flow fails
    with it, in the same words, when the run kept nothing (`kept_nothing`)."""
    lost = [outcome for outcome in report.files if outcome.all_quarantined]
    if not lost:
        return None
    hints = "".join(f"; {hint.message()}" for hint in report.hints)
    return CapselError(
        f"every row of {', '.join(str(outcome.path) for outcome in lost)} was quarantined{hints}; see why with "
        "`capsel quarantine --source FILE`, then fix the options and rerun with [[reingest]]"
    )
