"""OpenLineage events of a flow run: every facet valid against the spec, the published selection's facets."""

from __future__ import annotations

import os
from importlib.metadata import version
from pathlib import Path

import duckdb
import orjson
import pandas as pd
import pytest
from openlineage.client.serde import Serde

from capsel import __version__
from capsel.lineage.openlineage_events import FlowDatasets, ParentJob, run_event
from capsel.lineage.tables import duckdb_dataset, table_use
from capsel.publish.data_files import write_data_files
from capsel.quality.gate_report import write_gate_report
from tests.support.openlineage_schema import validate_event, validate_facet
from tests.unit.test_lineage_tables import FULL_RUN

RUN_ID = "0123456789abcdef0123456789abcdef"
PREFECT_RUN = "1b4e28ba-2fa1-11d2-883f-0016cb9a6b21"
SHA = "ab" * 32


def test_duckdb_tables_are_named_database_schema_table_as_duckdb_names_them(tmp_path):
    db = tmp_path / "pool.duckdb"
    con = duckdb.connect(str(db))
    try:
        con.execute("create table candidates (id varchar)")
        catalog, schema = con.execute(
            "select table_catalog, table_schema from information_schema.tables where table_name = 'candidates'"
        ).fetchone()
    finally:
        con.close()
    assert duckdb_dataset(db, "candidates") == (f"duckdb://{db.resolve()}", f"{catalog}.{schema}.candidates")
    assert (catalog, schema) == ("pool", "main")


def _members(n: int) -> pd.DataFrame:
    return pd.DataFrame({
        "candidate_id": [f"c{i}" for i in range(n)], "domain": ["math"] * n, "rank": list(range(1, n + 1)),
        "instruction": ["q"] * n, "input": [""] * n, "response": ["a"] * n, "score": [None] * n,
        "cap": [0.5] * n, "z": [0.1 * i for i in range(n)], "d_early": [1.0] * n, "d_late": [2.0] * n,
        "source_id": ["s1"] * n, "source_row": list(range(n)),
    })


def _gate_report(frame: pd.DataFrame, directory: Path) -> dict:
    """Real great-expectations results on `frame`, written by the gate's own report writer; returns validation.json."""
    import great_expectations as gx
    import great_expectations.expectations as gxe

    context = gx.get_context(mode="ephemeral")
    batch = (context.data_sources.add_pandas("selection").add_dataframe_asset("members")
             .add_batch_definition_whole_dataframe("members").get_batch(batch_parameters={"dataframe": frame}))
    suite = gx.ExpectationSuite(name="capsel_members", expectations=[
        gxe.ExpectColumnValuesToBeUnique(column="candidate_id"),
        gxe.ExpectColumnValuesToNotBeNull(column="response"),  # renamed `output` when published
        gxe.ExpectTableRowCountToEqual(value=len(frame) + 1),
    ])
    write_gate_report(directory, "sel-x", "2026-11-25T00:00:00+00:00", {"members": batch.validate(suite)})
    return orjson.loads((directory / "validation.json").read_bytes())


@pytest.fixture()
def published(tmp_path) -> Path:
    folder = tmp_path / "out" / "sel-x"
    folder.mkdir(parents=True)
    write_data_files(_members(5), folder, "sel-x", lambda path: None)
    _gate_report(_members(5), folder / "gate")
    (folder / "manifest.json").write_bytes(orjson.dumps({"gate": {
        "success": True, "n_expectations": 3, "report": "gate/index.html", "validation": "gate/validation.json"}}))
    return folder


def _event(state: str, datasets: FlowDatasets, error: str | None = None, parent: bool = True) -> dict:
    parent_job = ParentJob("capsel", "capsel-select", PREFECT_RUN) if parent else None
    event = run_event(state, RUN_ID, "capsel.select", "capsel", datasets, parent_job,
                      {"selection": {"budget": "5%", "domains": ["math"]}, "runner": {"kind": "local"}}, error)
    return orjson.loads(Serde.to_json(event))


def _datasets(tmp_path: Path, folder: Path | None) -> FlowDatasets:
    return FlowDatasets(
        tmp_path / "capsel.duckdb", source_files=[(str(tmp_path / "a.jsonl"), SHA)], selection_dir=folder,
        selection_id="sel-x" if folder else None, model={"fingerprint": "fp1", "name_or_path": "tiny", "dtype": "float32"},
        method="cap", selected=True, scoring_config_hash="h1", scoring_config={"layers": {"early": [1, 2]}},
        counters=FULL_RUN if folder else {},
    )


def test_every_event_and_facet_validates_against_the_spec(tmp_path, published):
    for state, error in (("START", None), ("COMPLETE", None), ("FAIL", "GateFailedError: 1 of 41")):
        event = _event(state, _datasets(tmp_path, published if state == "COMPLETE" else None), error)
        checked = set(validate_event(event))
        assert {"parent", "processing_engine", "tags", "executionParameters", "jobType"} <= checked
        assert ("errorMessage" in checked) == (state == "FAIL")
        # nothing outside the spec: every facet's schema is one the spec publishes
        assert all(facet["_schemaURL"].startswith("https://openlineage.io/spec/facets/")
                   for facet in event["run"]["facets"].values())
        if state == "COMPLETE":
            assert {"schema", "dataQualityAssertions", "outputStatistics", "version"} <= checked


def test_the_validator_refuses_custom_and_misplaced_facets():
    custom = {"_producer": "x", "_schemaURL": "urn:capsel:openlineage:facet:CapselRunFacet:1", "run_id": "r"}
    with pytest.raises(Exception):
        validate_facet("run", "capsel_run", custom)
    stats = {"_producer": "x", "rowCount": 1, "_schemaURL": "https://openlineage.io/spec/facets/1-0-2/"
             "OutputStatisticsOutputDatasetFacet.json#/$defs/OutputStatisticsOutputDatasetFacet"}
    validate_facet("outputFacets", "outputStatistics", stats)
    with pytest.raises(AssertionError):
        validate_facet("inputFacets", "outputStatistics", stats)
    with pytest.raises(AssertionError):
        validate_facet("outputFacets", "rowStats", stats)


def test_the_published_selection_carries_its_schema_rows_size_and_version(tmp_path, published):
    event = _event("COMPLETE", _datasets(tmp_path, published))
    output = next(o for o in event["outputs"] if o["namespace"] == "file")
    assert output["name"] == str(published.resolve())
    assert output["facets"]["version"]["datasetVersion"] == "sel-x"
    described = duckdb.sql(f"describe select * from read_parquet('{published / 'data.parquet'}')").fetchall()
    fields = output["facets"]["schema"]["fields"]
    assert [(f["name"], f["ordinal_position"]) for f in fields] == [(row[0], i) for i, row in enumerate(described, 1)]
    types = {f["name"]: f["type"] for f in fields}
    assert (types["rank"], types["z"], types["source_row"]) == ("int64", "double", "int64")
    sizes = [os.path.getsize(os.path.join(d, name)) for d, _, names in os.walk(published) for name in names]
    assert output["outputFacets"]["outputStatistics"] == {
        "_producer": f"https://pypi.org/project/capsel/{__version__}",
        "_schemaURL": "https://openlineage.io/spec/facets/1-0-2/OutputStatisticsOutputDatasetFacet.json"
                      "#/$defs/OutputStatisticsOutputDatasetFacet",
        "rowCount": 5, "size": sum(sizes), "fileCount": len(sizes),
    }


def test_each_gx_expectation_becomes_an_assertion_with_its_column(tmp_path, published):
    validation = orjson.loads((published / "gate" / "validation.json").read_bytes())
    event = _event("COMPLETE", _datasets(tmp_path, published))
    validate_event(event)
    output = next(o for o in event["outputs"] if o["namespace"] == "file")
    found = [(a["assertion"], a["success"], a.get("column"), a["name"])
             for a in output["facets"]["dataQualityAssertions"]["assertions"]]
    expected = [(r["expectation_config"]["type"], r["success"]) for r in validation["tables"]["members"]["results"]]
    assert [(a, s) for a, s, _, _ in found] == expected
    assert found == [
        ("expect_column_values_to_be_unique", True, "candidate_id",
         "members.expect_column_values_to_be_unique.candidate_id"),
        # `response` is published as `output`: not a column of the schema facet, so named but not a column
        ("expect_column_values_to_not_be_null", True, None, "members.expect_column_values_to_not_be_null.response"),
        ("expect_table_row_count_to_equal", False, None, "members.expect_table_row_count_to_equal"),
    ]


def test_tables_are_named_in_the_duckdb_file_and_carry_their_row_counts(tmp_path, published):
    event = _event("COMPLETE", _datasets(tmp_path, published))
    namespace = f"duckdb://{(tmp_path / 'capsel.duckdb').resolve()}"
    written = {o["name"]: o["outputFacets"]["outputStatistics"]["rowCount"]
               for o in event["outputs"] if o["namespace"] == namespace}
    assert written == {f"capsel.main.{table}": rows
                       for table, rows in table_use(FULL_RUN, "cap", selected=True).written.items()}
    read = [i["name"] for i in event["inputs"] if i["namespace"] == namespace]
    assert "capsel.main.divergences" in read and "capsel.main.runs" not in read


def test_start_names_no_outputs_and_the_run_facets_name_capsel_and_its_parent(tmp_path):
    event = _event("START", _datasets(tmp_path, None))
    assert event["outputs"] == []
    facets = event["run"]["facets"]
    assert facets["parent"]["run"]["runId"] == PREFECT_RUN
    assert (facets["parent"]["job"]["namespace"], facets["parent"]["job"]["name"]) == ("capsel", "capsel-select")
    engine = facets["processing_engine"]
    assert (engine["name"], engine["version"], engine["openlineageAdapterVersion"]) == (
        "capsel", __version__, version("openlineage-python"))
    tags = {t["key"]: t["value"] for t in facets["tags"]["tags"]}
    assert (tags["capsel.model_fingerprint"], tags["capsel.scoring_config_hash"], tags["capsel.method"]) == (
        "fp1", "h1", "cap")
    params = {p["key"]: p["value"] for p in facets["executionParameters"]["parameters"]}
    assert params == {"pipeline.selection.budget": "5%", "pipeline.selection.domains": '["math"]',
                      "pipeline.runner.kind": "local", "scoring_config.layers.early": "[1,2]"}
    assert "parent" not in _event("START", _datasets(tmp_path, None), parent=False)["run"]["facets"]


def test_struct_columns_list_their_fields(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from capsel.lineage.facets import schema_facet

    table = pa.table({"id": pa.array([1], pa.int32()),
                      "source": pa.array([{"path": "a.jsonl", "row": 3}], pa.struct([("path", pa.string()),
                                                                                     ("row", pa.int64())]))})
    pq.write_table(table, tmp_path / "t.parquet")
    facet = orjson.loads(Serde.to_json(schema_facet(tmp_path / "t.parquet")))
    validate_facet("facets", "schema", facet)
    assert facet["fields"] == [
        {"name": "id", "type": "int32", "ordinal_position": 1},
        {"name": "source", "type": "struct<path: string, row: int64>", "ordinal_position": 2, "fields": [
            {"name": "path", "type": "string", "ordinal_position": 1},
            {"name": "row", "type": "int64", "ordinal_position": 2}]},
    ]
