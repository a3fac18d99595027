"""OpenLineage run events of the closed loop's stages: a fine-tune reads a selection folder and writes a model
folder; an evaluation reads model folders and evaluation files and writes the `evaluations` table."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent
from openlineage.client.facet_v2 import job_type_job

from capsel.lineage import facets
from capsel.lineage.facets import PRODUCER
from capsel.lineage.openlineage_events import STATES, ParentJob, file_dataset, version_facet
from capsel.lineage.tables import duckdb_dataset
from capsel.versioning import code_version


@dataclass
class StageDatasets:
    """The folders and files a stage read and wrote, each with its version (selection id, finetune id, sha256)."""

    inputs: list[tuple[str, str | None]] = field(default_factory=list)
    outputs: list[tuple[str, str | None]] = field(default_factory=list)
    tables_written: list[tuple[Path, str]] = field(default_factory=list)  # (database, table)


def stage_event(state: str, run_id: str, job_name: str, namespace: str, datasets: StageDatasets,
                parent: ParentJob | None = None) -> RunEvent:
    """One OpenLineage RunEvent (START or COMPLETE) of a fine-tune or an evaluation run."""
    run_facets: dict = {"processing_engine": facets.processing_engine(),
                        "tags": facets.tags({"capsel.code_version": code_version()})}
    if parent is not None:
        run_facets["parent"] = facets.parent(parent.namespace, parent.name, parent.run_id)
    outputs = [OutputDataset(*file_dataset(path), facets=version_facet(version))
               for path, version in datasets.outputs]
    outputs += [OutputDataset(*duckdb_dataset(db, table)) for db, table in datasets.tables_written]
    return RunEvent(
        eventType=STATES[state],
        eventTime=datetime.now(timezone.utc).isoformat(),
        run=Run(runId=str(uuid.UUID(hex=run_id)), facets=run_facets),
        job=Job(namespace=namespace, name=job_name, facets={"jobType": job_type_job.JobTypeJobFacet(
            processingType="BATCH", integration="PREFECT", jobType="TASK", producer=PRODUCER)}),
        producer=PRODUCER,
        inputs=[InputDataset(*file_dataset(path), facets=version_facet(version))
                for path, version in datasets.inputs],
        outputs=outputs if state != "START" else [],
    )
