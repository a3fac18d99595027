"""OpenLineage standard facets of a capsel run and of the selection folder it published.

Only the spec's own facets: their `_schemaURL`s resolve to the published spec, which a custom
facet's cannot offline. What capsel-specific facets carried goes into `tags` and `executionParameters`.
"""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path
from typing import Any, BinaryIO, Iterator

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
from openlineage.client.facet_v2 import (
    data_quality_assertions_dataset,
    execution_parameters_run,
    output_statistics_output_dataset,
    parent_run,
    processing_engine_run,
    schema_dataset,
    tags_run,
)

from capsel import __version__
from capsel.publish.data_files import PARQUET_FILE
from capsel.publish.destination import MANIFEST, Destination, folder_files, open_file

PRODUCER = f"https://pypi.org/project/capsel/{__version__}"
TAG_SOURCE = "CAPSEL"


def schema_facet(parquet: Path | BinaryIO) -> schema_dataset.SchemaDatasetFacet:
    """The columns and Arrow types of a Parquet file, read from its footer."""
    return schema_dataset.SchemaDatasetFacet(fields=_fields(pq.read_schema(parquet)), producer=PRODUCER)


def _fields(fields: Any) -> list[schema_dataset.SchemaDatasetFacetFields]:
    return [
        schema_dataset.SchemaDatasetFacetFields(
            name=f.name, type=str(f.type), ordinal_position=position,
            fields=_fields(list(f.type)) if pa.types.is_struct(f.type) else None,
        )
        for position, f in enumerate(fields, start=1)
    ]


def output_statistics(folder: Destination) -> output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet:
    """A published selection folder's rows (data.parquet's), and the bytes and files written into it."""
    files = folder_files(folder)
    with open_file(folder, PARQUET_FILE) as data:
        rows = pq.ParquetFile(data).metadata.num_rows
    return output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
        rowCount=rows, size=sum(files.values()), fileCount=len(files), producer=PRODUCER,
    )


def output_statistics_rows(rows: int) -> output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet:
    """The rows a run wrote to a table (its size in bytes is not counted)."""
    return output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(rowCount=rows, producer=PRODUCER)


def quality_assertions(folder: Destination) -> data_quality_assertions_dataset.DataQualityAssertionsDatasetFacet:
    """The gate's expectations on a published selection, one assertion each, from the GX results its manifest names."""
    with open_file(folder, MANIFEST) as manifest:
        gate = orjson.loads(manifest.read())["gate"]
    with open_file(folder, gate["validation"]) as results:
        validation = orjson.loads(results.read())
    with open_file(folder, PARQUET_FILE) as data:
        columns = set(pq.read_schema(data).names)
    return data_quality_assertions_dataset.DataQualityAssertionsDatasetFacet(
        assertions=list(_assertions(validation, columns)), producer=PRODUCER
    )


def _assertions(validation: dict, columns: set[str]) -> Iterator[data_quality_assertions_dataset.Assertion]:
    # gate/validation.json (capsel.quality.gate_report): {"tables": {table: a GX suite result as JSON}};
    # the gate blocks publishing on any failure, hence severity "error"
    for table, result in validation["tables"].items():
        for outcome in result["results"]:
            config = outcome["expectation_config"]
            column = config.get("kwargs", {}).get("column")
            yield data_quality_assertions_dataset.Assertion(
                assertion=config["type"], success=bool(outcome["success"]), severity="error",
                # a column only where it is one of the published file's (the schema facet's) columns
                column=column if table == "members" and column in columns else None,
                name=".".join(part for part in (table, config["type"], column) if part), params=None,
            )


def processing_engine() -> processing_engine_run.ProcessingEngineRunFacet:
    """capsel as the engine, with the openlineage-python version that wrote the event."""
    return processing_engine_run.ProcessingEngineRunFacet(
        name="capsel", version=__version__, openlineageAdapterVersion=version("openlineage-python"),
        producer=PRODUCER,
    )


def parent(namespace: str, name: str, run_id: str) -> parent_run.ParentRunFacet:
    """The run that started this one (the Prefect flow run around a capsel flow run)."""
    return parent_run.ParentRunFacet(
        run=parent_run.Run(runId=run_id), job=parent_run.Job(namespace=namespace, name=name), producer=PRODUCER,
    )


def tags(values: dict[str, str | None]) -> tags_run.TagsRunFacet:
    """Run tags for the values that are set (code version, model fingerprint, scoring config hash...)."""
    return tags_run.TagsRunFacet(
        tags=[tags_run.TagsRunFacetFields(key=key, value=value, source=TAG_SOURCE)
              for key, value in values.items() if value is not None],
        producer=PRODUCER,
    )


def execution_parameters(configs: dict[str, dict | None]) -> execution_parameters_run.ExecutionParametersRunFacet:
    """Each config's leaves as `<config>.<path>` = the text, or the JSON of any other value."""
    return execution_parameters_run.ExecutionParametersRunFacet(
        parameters=[
            execution_parameters_run.ExecutionParameter(
                key=key, value=value if isinstance(value, str) else orjson.dumps(value).decode()
            )
            for prefix, config in configs.items() if config
            for key, value in _leaves(config, prefix)
        ],
        producer=PRODUCER,
    )


def _leaves(value: Any, key: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict) and value:
        for name, inner in value.items():
            yield from _leaves(inner, f"{key}.{name}")
    else:
        yield key, value
