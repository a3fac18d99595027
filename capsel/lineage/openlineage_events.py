"""OpenLineage run events for flow runs: inputs (source files, tables read), outputs, model and config facets.

openlineage-python is a plain client library (no Prefect); the flows decide when to emit.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import attr
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import RunFacet, dataset_version_dataset, error_message_run, job_type_job

from capsel import __version__
from capsel.errors import CapselError
from capsel.versioning import code_version

PRODUCER = f"https://pypi.org/project/capsel/{__version__}"
# Tables a flow reads to score and select, and those it writes.
TABLES_READ = ("candidates", "sources", "generations", "divergences", "models", "scoring_configs")
TABLES_WRITTEN = (
    "sources", "candidates", "duplicates", "quarantine", "models", "scoring_configs", "generations",
    "divergences", "selections", "selection_members", "runs",
)
STATES = {"START": RunState.START, "COMPLETE": RunState.COMPLETE, "FAIL": RunState.FAIL}


@attr.define
class CapselModelRunFacet(RunFacet):
    """The scoring model: content fingerprint of its files and dtype, and where it was loaded from."""

    fingerprint: str
    name_or_path: str | None = None
    dtype: str | None = None

    @staticmethod
    def _get_schema() -> str:
        return "urn:capsel:openlineage:facet:CapselModelRunFacet:1"


@attr.define
class CapselRunFacet(RunFacet):
    """The capsel run behind the event: its run id, the Prefect flow run, code version and configs."""

    run_id: str
    code_version: str
    prefect_flow_run_id: str | None = None
    scoring_config_hash: str | None = None
    scoring_config: dict | None = None
    pipeline_config: dict | None = None
    counters: dict | None = None

    @staticmethod
    def _get_schema() -> str:
        return "urn:capsel:openlineage:facet:CapselRunFacet:1"


@dataclass
class FlowDatasets:
    """What a flow run read and wrote, filled in as the run goes (START carries what is known then)."""

    db_path: Path
    source_files: list[tuple[str, str]] = field(default_factory=list)  # (path, sha256)
    selection_dir: Path | None = None
    selection_id: str | None = None
    model: dict | None = None  # fingerprint, name_or_path, dtype
    scoring_config_hash: str | None = None
    scoring_config: dict | None = None
    counters: dict | None = None


def run_event(
    state: str, run_id: str, job_name: str, namespace: str, datasets: FlowDatasets,
    prefect_flow_run_id: str | None = None, pipeline_config: dict | None = None, error: str | None = None,
) -> RunEvent:
    """One OpenLineage RunEvent (START, COMPLETE or FAIL) of a capsel flow run."""
    facets: dict = {
        "capsel_run": CapselRunFacet(
            run_id=run_id, code_version=code_version(), prefect_flow_run_id=prefect_flow_run_id,
            scoring_config_hash=datasets.scoring_config_hash, scoring_config=datasets.scoring_config,
            pipeline_config=pipeline_config, counters=datasets.counters, producer=PRODUCER,
        ),
    }
    if datasets.model:
        facets["capsel_model"] = CapselModelRunFacet(**datasets.model, producer=PRODUCER)
    if error is not None:
        facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
            message=error, programmingLanguage="python", producer=PRODUCER
        )
    db_namespace = f"duckdb://{datasets.db_path.resolve()}"
    inputs = [
        InputDataset(namespace="file", name=str(Path(path).resolve()), facets=_version_facet(sha256))
        for path, sha256 in datasets.source_files
    ] + [InputDataset(namespace=db_namespace, name=table) for table in TABLES_READ]
    outputs = [OutputDataset(namespace=db_namespace, name=table) for table in TABLES_WRITTEN]
    if datasets.selection_dir is not None:
        outputs.append(OutputDataset(
            namespace="file", name=str(datasets.selection_dir.resolve()), facets=_version_facet(datasets.selection_id)
        ))
    job_facets = {"jobType": job_type_job.JobTypeJobFacet(
        processingType="BATCH", integration="PREFECT", jobType="FLOW", producer=PRODUCER
    )}
    return RunEvent(
        eventType=STATES[state],
        eventTime=datetime.now(timezone.utc).isoformat(),
        run=Run(runId=str(uuid.UUID(hex=run_id)), facets=facets),
        job=Job(namespace=namespace, name=job_name, facets=dict(job_facets)),
        producer=PRODUCER,
        inputs=inputs,
        # START names no outputs: nothing is written yet, and a FAIL lists what may hold committed shards
        outputs=outputs if state != "START" else [],
    )


def _version_facet(version: str | None) -> dict:
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
