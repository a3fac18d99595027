"""Bookkeeping the flows need from the store: incoming files and the files a run read."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import duckdb

from capsel.db.records import fetch_records
from capsel.ingest.inputs import InputFile, folder_files, named_file, unsupported
from capsel.ingest.summary import IngestReport
from capsel.object_storage.remote_files import remote_files
from capsel.object_storage.urls import is_url


def incoming_files(paths: Sequence[str | Path]) -> list[InputFile]:
    """Supported regular files of the given folders (in name order) and files; an empty folder gives none.

    Unlike `resolve_inputs`, an empty incoming folder is not an error: a nightly run may find nothing new.
    A storage URL gives its objects the same way (an empty prefix does not exist in storage: none).
    """
    files: list[InputFile] = []
    for given in paths:
        if is_url(given):
            files.extend(remote_files(str(given), unsupported, missing_ok=True)[0])
            continue
        path = Path(given).expanduser()
        files.extend(folder_files(path)[0] if path.is_dir() else [named_file(path)])
    return files


def ingested_files(con: duckdb.DuckDBPyConnection, report: IngestReport) -> list[tuple[str, str]]:
    """(path as given to this run, sha256) of every file the ingest read or found already ingested."""
    known = {
        row["source_id"]: row["sha256"]
        for row in fetch_records(con, "flows/flow_source_files", {"source_ids": [f.source_id for f in report.files]})
    }
    return [(str(outcome.path), known[outcome.source_id]) for outcome in report.files if outcome.source_id in known]
