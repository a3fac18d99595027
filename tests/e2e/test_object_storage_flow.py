"""The selection flow with its pool in a bucket and a storage output root, on real Prefect and S3 servers."""

from __future__ import annotations

import hashlib

import duckdb
import orjson
import pyarrow.parquet as pq
import pytest

from capsel.errors import CapselError
from tests.support.flow_pool import flow_config, tiny_flow_model, write_pool_file
from tests.support.openlineage_schema import validate_event
from tests.support.s3_server import SECRET, s3_filesystem

pytestmark = pytest.mark.e2e


def test_a_flow_ingests_from_a_prefix_and_publishes_under_a_storage_root(prefect_api, s3_server, tmp_path,
                                                                        monkeypatch):
    from capsel.flows.select_flow import select_flow

    for key, value in s3_server.env().items():
        if key.startswith("AWS_"):
            monkeypatch.setenv(key, value)
    monkeypatch.setenv("CAPSEL_OUTPUT_ROOT", str(tmp_path / "local-root"))  # where the lineage file goes
    # the deployment lets its runs read the incoming prefix, publish under the selections root and use its database
    monkeypatch.setenv("CAPSEL_STORAGE_ROOTS", "s3://flow-pool/incoming,s3://flow-sels/root")
    monkeypatch.setenv("CAPSEL_DB_PATH", str(tmp_path / "capsel.duckdb"))
    fs = s3_filesystem(s3_server)
    fs.mkdir("flow-pool")
    fs.mkdir("flow-sels")
    pool = write_pool_file(tmp_path / "a.jsonl", 10, seed=1)
    fs.put_file(str(pool), "flow-pool/incoming/a.jsonl")
    config = flow_config(tmp_path, tiny_flow_model(tmp_path / "model"), ["s3://flow-pool/incoming/"],
                         selection={"out": "v1"}).model_copy(update={"output_root": "s3://flow-sels/root"})

    report = select_flow(**config.parameters())

    selection_id = report["selection"]["selection_id"]
    assert report["selection"]["path"] == f"s3://flow-sels/root/v1/{selection_id}"
    fs.invalidate_cache()
    manifest = orjson.loads(fs.cat_file(f"flow-sels/root/v1/{selection_id}/manifest.json"))
    assert manifest["selection_id"] == selection_id and manifest["n_members"] == 10
    con = duckdb.connect(str(tmp_path / "capsel.duckdb"), read_only=True)
    try:
        assert con.execute("select path, sha256 from sources").fetchall() == [
            ("s3://flow-pool/incoming/a.jsonl", hashlib.sha256(pool.read_bytes()).hexdigest())]
        assert con.execute("select out_dir, status from selections").fetchall() == [
            (f"s3://flow-sels/root/v1/{selection_id}", "published")]
        kept = "\n".join(str(con.table(name).fetchall()) for (name,) in con.execute("show tables").fetchall())
    finally:
        con.close()
    assert SECRET not in kept
    _check_lineage(tmp_path / "local-root", fs, selection_id, pool, manifest)

    escaping = config.model_copy(update={"selection": config.selection.model_copy(update={"out": "s3://flow-sels/x"})})
    with pytest.raises(CapselError, match="outside the output root"):
        select_flow(**escaping.parameters())


def _check_lineage(local_root, fs, selection_id: str, pool, manifest: dict) -> None:
    """The COMPLETE event names the pool object and the published prefix by their storage names, with the facets
    read from the bucket: schema, rows, bytes and files, one assertion per gate expectation; all valid to the spec."""
    events = [orjson.loads(line) for line in (local_root / "openlineage" / "events.jsonl").read_bytes().splitlines()]
    for event in events:
        validate_event(event)
    complete = events[-1]
    assert complete["eventType"] == "COMPLETE"
    [source] = [d for d in complete["inputs"] if d["namespace"] == "s3://flow-pool"]
    assert source["name"] == "incoming/a.jsonl"
    assert source["facets"]["version"]["datasetVersion"] == hashlib.sha256(pool.read_bytes()).hexdigest()
    [published] = [d for d in complete["outputs"] if d["namespace"] == "s3://flow-sels"]
    assert published["name"] == f"root/v1/{selection_id}"
    objects = fs.find(f"flow-sels/root/v1/{selection_id}", detail=True)
    statistics = published["outputFacets"]["outputStatistics"]
    assert statistics == {**statistics, "rowCount": 10, "fileCount": len(objects),
                          "size": sum(info["size"] for info in objects.values())}
    with fs.open(f"flow-sels/root/v1/{selection_id}/data.parquet", "rb") as data:
        columns = pq.read_schema(data).names
    assert [field["name"] for field in published["facets"]["schema"]["fields"]] == columns
    assert len(published["facets"]["dataQualityAssertions"]["assertions"]) == manifest["gate"]["n_expectations"]
