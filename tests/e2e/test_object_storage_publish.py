"""`capsel select --out s3://...` against a real S3 server on 127.0.0.1: the same files as a local publish, the
manifest uploaded last, a publish killed before it is never listed and is cleaned up, and no secret leaks."""

from __future__ import annotations

import hashlib
import io
import re
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import orjson
import pyarrow.parquet as pq
import pytest

from capsel.faults import FAULT_POINT_ENV
from tests.support.s3_server import SECRET, s3_filesystem, start_s3_server
from tests.support.scored_pool import scored_store
from tests.support.store_state import selection_rows

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def bucket(s3_server):
    fs = s3_filesystem(s3_server)
    fs.mkdir("sels")
    return fs


@pytest.fixture
def store(tmp_path):
    return scored_store(tmp_path)


def capsel(s3, cwd: Path, *args: str, fault: str | None = None) -> subprocess.CompletedProcess:
    # a publish to storage stages in the temp dir: the test's own, so a kill's leftover stays in the test's folder
    temp = cwd / "temp"
    temp.mkdir(exist_ok=True)
    env = s3.env(CAPSEL_DB_PATH=str(cwd / "capsel.duckdb"), CAPSEL_OUTPUT_ROOT=str(cwd / "root"), TMPDIR=str(temp))
    if fault:
        env[FAULT_POINT_ENV] = fault
    return subprocess.run([sys.executable, "-m", "capsel", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=180)


def local_files(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in folder.rglob("*") if path.is_file()}


def remote_files(fs, prefix: str) -> dict[str, bytes]:
    fs.invalidate_cache()
    return {key.removeprefix(prefix + "/"): fs.cat_file(key) for key in fs.find(prefix)}


def untimed(name: str) -> str:
    """A file name with the validation time GX puts in its report paths taken out."""
    return re.sub(r"\d{8}T\d{6}\.\d+Z", "<time>", name)


def without_run_details(manifest: dict) -> dict:
    """A manifest without what differs between two publishes of the same selection: its id, time and run, and
    the sha256 of dataset_info.json, which names the selection."""
    return {key: value for key, value in manifest.items()
            if key not in ("selection_id", "created_at", "run_id", "files")}


def test_publish_to_a_bucket_matches_a_local_publish(s3_server, bucket, store):
    remote = capsel(s3_server, store, "select", "--budget", "3", "--out", "s3://sels/cap", "--json")
    assert remote.returncode == 0, remote.stderr
    local = capsel(s3_server, store, "select", "--budget", "3", "--out", "local", "--json")
    assert local.returncode == 0, local.stderr
    remote_report, local_report = orjson.loads(remote.stdout), orjson.loads(local.stdout)
    selection_id = remote_report["selection_id"]
    assert remote_report["path"] == f"s3://sels/cap/{selection_id}"

    uploaded = remote_files(bucket, f"sels/cap/{selection_id}")
    written = local_files(Path(local_report["path"]))
    assert sorted(map(untimed, uploaded)) == sorted(map(untimed, written))
    assert "data.parquet" in uploaded and "report/index.html" in uploaded
    assert pq.read_table(io.BytesIO(uploaded["data.parquet"])).equals(
        pq.read_table(io.BytesIO(written["data.parquet"])))
    assert uploaded["data.jsonl"] == written["data.jsonl"]
    remote_manifest, local_manifest = orjson.loads(uploaded["manifest.json"]), orjson.loads(written["manifest.json"])
    assert remote_manifest["selection_id"] == selection_id and remote_manifest["n_members"] == 6
    assert without_run_details(remote_manifest) == without_run_details(local_manifest)
    assert remote_manifest["files"] == {name: hashlib.sha256(uploaded[name]).hexdigest()
                                        for name in remote_manifest["files"]}

    rows = {row[0]: row[1:] for row in selection_rows(store / "capsel.duckdb")}
    assert rows[selection_id] == ("published", f"s3://sels/cap/{selection_id}")
    listing = capsel(s3_server, store, "selections", "--json")
    assert listing.returncode == 0, listing.stderr
    present = {row["selection_id"]: row["present"] for row in orjson.loads(listing.stdout)["selections"]}
    assert present == {selection_id: True, local_report["selection_id"]: True}

    con = duckdb.connect(str(store / "capsel.duckdb"), read_only=True)
    try:
        kept = "\n".join(str(con.table(name).fetchall()) for (name,) in con.execute("show tables").fetchall())
    finally:
        con.close()
    for text in (remote.stdout, remote.stderr, listing.stdout, listing.stderr, kept, *map(repr, uploaded.values())):
        assert SECRET not in text


def test_a_publish_killed_before_its_manifest_is_never_listed_and_is_cleaned_up(s3_server, bucket, store):
    killed = capsel(s3_server, store, "select", "--budget", "3", "--out", "s3://sels/killed",
                    fault="upload.before_last_file")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    [(selection_id, status, out_dir)] = selection_rows(store / "capsel.duckdb")
    assert status == "publishing" and out_dir == f"s3://sels/killed/{selection_id}"
    partial = remote_files(bucket, f"sels/killed/{selection_id}")
    assert "data.parquet" in partial and "manifest.json" not in partial

    listing = capsel(s3_server, store, "selections", "--json")
    assert listing.returncode == 0, listing.stderr
    report = orjson.loads(listing.stdout)
    assert report["selections"] == []
    assert report["reconciled"]["rolled_back"] == [selection_id]
    assert report["reconciled"]["partial_uploads"] == [out_dir]
    assert remote_files(bucket, "sels/killed") == {} and selection_rows(store / "capsel.duckdb") == []

    again = capsel(s3_server, store, "select", "--budget", "3", "--out", "s3://sels/killed", "--json")
    assert again.returncode == 0, again.stderr
    assert "manifest.json" in remote_files(bucket, f"sels/killed/{orjson.loads(again.stdout)['selection_id']}")


def test_a_publish_killed_after_its_manifest_is_finished(s3_server, bucket, store):
    killed = capsel(s3_server, store, "select", "--budget", "3", "--out", "s3://sels/late",
                    fault="publish.after_rename")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    [(selection_id, status, _)] = selection_rows(store / "capsel.duckdb")
    assert status == "publishing"

    listing = capsel(s3_server, store, "selections", "--json")
    report = orjson.loads(listing.stdout)
    assert report["reconciled"]["completed"] == [selection_id]
    assert [(row["selection_id"], row["present"]) for row in report["selections"]] == [(selection_id, True)]
    assert selection_rows(store / "capsel.duckdb")[0][1] == "published"


def test_a_bucket_that_does_not_exist_is_one_line_and_leaves_no_row(s3_server, bucket, store):
    failed = capsel(s3_server, store, "select", "--budget", "3", "--out", "s3://no-such-bucket/sels")
    assert failed.returncode == 3
    [line] = failed.stderr.strip().splitlines()
    assert line.startswith("error: s3://no-such-bucket/sels/sel-") and "The specified bucket does not exist" in line
    assert selection_rows(store / "capsel.duckdb") == []


def test_storage_out_of_reach_leaves_an_unfinished_publish_alone(store):
    server, s3 = start_s3_server()
    try:
        s3_filesystem(s3).mkdir("brief")
        killed = capsel(s3, store, "select", "--budget", "3", "--out", "s3://brief/sels", fault="publish.after_rename")
        assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    finally:
        server.stop()
    [(selection_id, status, out_dir)] = selection_rows(store / "capsel.duckdb")

    listing = capsel(s3, store, "selections")
    assert listing.returncode == 3
    [line] = listing.stderr.strip().splitlines()
    assert line.startswith(f"error: {out_dir}: cannot read manifest.json")
    assert selection_rows(store / "capsel.duckdb") == [(selection_id, status, out_dir)]  # neither undone nor finished
    assert [path.name for path in (store / "temp").iterdir() if path.is_dir()] == [f".tmp-{selection_id}"]
