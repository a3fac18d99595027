"""Stage: read pool files into the store as one run: dedup per domain, quarantine bad rows, sample if asked."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

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
