"""OpenLineage run events for flow runs: the source files and tables read, the tables and selection written.

openlineage-python is a plain client library (no Prefect); the flows decide when to emit and pass
in the Prefect flow run as the parent. Every facet is one of the spec's (capsel.lineage.facets).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit

from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import dataset_version_dataset, error_message_run, job_type_job

from capsel.errors import CapselError
from capsel.lineage import facets
from capsel.lineage.facets import PRODUCER
from capsel.lineage.tables import duckdb_dataset, table_use
from capsel.object_storage.urls import is_url
from capsel.publish.data_files import PARQUET_FILE
from capsel.publish.destination import Destination, open_file
from capsel.versioning import code_version

STATES = {"START": RunState.START, "COMPLETE": RunState.COMPLETE, "FAIL": RunState.FAIL}


@dataclass(frozen=True)
class ParentJob:
    """The run a capsel flow run belongs to: the Prefect flow run, as an OpenLineage job and run id."""

    namespace: str
    name: str
    run_id: str


@dataclass
class FlowDatasets:
    """What a flow run read and wrote, filled in as the run goes (START carries what is known then)."""

    db_path: Path
    source_files: list[tuple[str, str]] = field(default_factory=list)  # (path, sha256)
    selection_dir: Destination | None = None
    selection_id: str | None = None
    model: dict | None = None  # fingerprint, name_or_path, dtype
    method: str | None = None  # the scoring method whose results the run wrote or selected by
    selected: bool = False  # the select stage ran (it read the pool, whatever the gate then said)
    scoring_config_hash: str | None = None
    scoring_config: dict | None = None
    counters: dict = field(default_factory=dict)  # FlowReport.counters: what each stage did


def run_event(
    state: str, run_id: str, job_name: str, namespace: str, datasets: FlowDatasets,
    parent: ParentJob | None = None, pipeline_config: dict | None = None, error: str | None = None,
) -> RunEvent:
    """One OpenLineage RunEvent (START, COMPLETE or FAIL) of a capsel flow run."""
    run_facets: dict = {
        "processing_engine": facets.processing_engine(),
        "tags": facets.tags(_tags(datasets)),
        "executionParameters": facets.execution_parameters(
            {"pipeline": pipeline_config, "scoring_config": datasets.scoring_config}
        ),
    }
    if parent is not None:
        run_facets["parent"] = facets.parent(parent.namespace, parent.name, parent.run_id)
    if error is not None:
        run_facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
            message=error, programmingLanguage="python", producer=PRODUCER
        )
    use = table_use(datasets.counters, datasets.method, datasets.selected)
    inputs = [
        InputDataset(*file_dataset(path), facets=version_facet(sha256))
        for path, sha256 in datasets.source_files
    ] + [InputDataset(*duckdb_dataset(datasets.db_path, table)) for table in use.read]
    outputs = [
        OutputDataset(*duckdb_dataset(datasets.db_path, table),
                      outputFacets={"outputStatistics": facets.output_statistics_rows(rows)})
        for table, rows in use.written.items()
    ]
    if datasets.selection_dir is not None:
        outputs.append(_selection_output(datasets.selection_dir, datasets.selection_id))
    job_facets = {"jobType": job_type_job.JobTypeJobFacet(
        processingType="BATCH", integration="PREFECT", jobType="FLOW", producer=PRODUCER
    )}
    return RunEvent(
        eventType=STATES[state],
        eventTime=datetime.now(timezone.utc).isoformat(),
        run=Run(runId=str(uuid.UUID(hex=run_id)), facets=run_facets),
        job=Job(namespace=namespace, name=job_name, facets=dict(job_facets)),
        producer=PRODUCER,
        inputs=inputs,
        # START names no outputs: nothing is written yet, and a FAIL lists what the stages before it committed
        outputs=outputs if state != "START" else [],
    )


def _selection_output(folder: Destination, selection_id: str | None) -> OutputDataset:
    # the gate checked exactly the rows published, so its assertions sit on the published dataset (among
    # the dataset facets, where OpenLineage's dbt integration also puts them)
    with open_file(folder, PARQUET_FILE) as data:
        schema = facets.schema_facet(data)
    dataset_facets: dict = {
        **version_facet(selection_id),
        "schema": schema,
        "dataQualityAssertions": facets.quality_assertions(folder),
    }
    return OutputDataset(*file_dataset(str(folder)), facets=dataset_facets,
                         outputFacets={"outputStatistics": facets.output_statistics(folder)})


def file_dataset(location: str) -> tuple[str, str]:
    """OpenLineage namespace and name of a file or folder (Naming.md): `file` and its absolute path, or for
    object storage `scheme://bucket` and the key (`s3://pool`, `incoming/a.jsonl`)."""
    if not is_url(location):
        return "file", str(Path(location).resolve())
    parts = urlsplit(location)
    return f"{parts.scheme}://{parts.netloc}", parts.path.lstrip("/")


def _tags(datasets: FlowDatasets) -> dict[str, str | None]:
    model = datasets.model or {}
    return {
        "capsel.code_version": code_version(), "capsel.method": datasets.method,
        "capsel.model_fingerprint": model.get("fingerprint"), "capsel.model": model.get("name_or_path"),
        "capsel.model_dtype": model.get("dtype"), "capsel.scoring_config_hash": datasets.scoring_config_hash,
        "capsel.selection_id": datasets.selection_id,
    }


def version_facet(version: str | None) -> dict:
    if not version:
        return {}
    return {"version": dataset_version_dataset.DatasetVersionDatasetFacet(datasetVersion=version, producer=PRODUCER)}


def event_emitter(
    transport: str, output_root: Path, file: Path, url: str | None
) -> Callable[[RunEvent], None] | None:
    """A function that sends events: to a JSON Lines file (default), an HTTP endpoint, the console, or nowhere."""
    from openlineage.client import OpenLineageClient

    if transport == "none":
        return None
    if transport == "file":
        from openlineage.client.transport.file import FileConfig, FileTransport

        path = file if file.is_absolute() else output_root / file
        path.parent.mkdir(parents=True, exist_ok=True)
        client = OpenLineageClient(transport=FileTransport(FileConfig(log_file_path=str(path), append=True)))
    elif transport == "http":
        from openlineage.client.transport.http import HttpConfig, HttpTransport

        if not url:
            raise CapselError("[[openlineage_url]] is needed for the http OpenLineage transport")
        client = OpenLineageClient(transport=HttpTransport(HttpConfig(url=url)))
    elif transport == "console":
        from openlineage.client.transport.console import ConsoleConfig, ConsoleTransport

        client = OpenLineageClient(transport=ConsoleTransport(ConsoleConfig()))
    else:
        raise ValueError(f"unknown OpenLineage transport {transport!r}")
    return client.emit
