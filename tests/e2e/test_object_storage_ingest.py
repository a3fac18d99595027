"""`capsel ingest s3://...` against a real S3 server on 127.0.0.1: the same rows, ids and sha256 as a local ingest of
the same files, the URL recorded as the source path, and the credentials nowhere in what capsel prints or keeps."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import orjson
import pytest

from capsel.db import open_db
from capsel.ingest.pipeline import IngestOptions, ingest
from capsel.ingest.records import parse_field_map
from tests.support.s3_server import SECRET, S3Server, s3_filesystem

pytestmark = pytest.mark.e2e

SAMPLE_POOL = Path(__file__).resolve().parents[2] / "capsel" / "data" / "sample_pool"
SCIENCE = ["science.csv", "science_extra.parquet"]
READ_AS_SCIENCE = ["--domain", "science", "--map", "instruction=question,response=answer"]


@pytest.fixture(scope="module")
def bucket(s3_server):
    """Bucket `pool`: science/ holds the two science files, a text file and a deeper prefix."""
    fs = s3_filesystem(s3_server)
    fs.mkdir("pool")
    for name in SCIENCE:
        fs.put_file(str(SAMPLE_POOL / name), f"pool/science/{name}")
    fs.pipe_file("pool/science/notes.txt", b"not a pool file")
    fs.pipe_file("pool/science/old/science.csv", (SAMPLE_POOL / "science.csv").read_bytes())
    return fs


def capsel(s3: S3Server, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "capsel", *args], cwd=cwd, env=s3.env(), capture_output=True,
                          text=True, timeout=180)


def rows(db: Path, name: str) -> list[tuple]:
    """A table's rows without what differs between two runs (run ids, times)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        frame = con.table(name).df()
        frame = frame.drop(columns=[column for column in frame.columns if column.endswith(("_run_id", "_at"))])
    finally:
        con.close()
    return sorted(map(tuple, frame.astype(str).to_numpy().tolist()))


def every_value(db: Path) -> str:
    """Every row of every table as text: where a leaked secret would show."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return "\n".join(str(con.table(name).fetchall()) for (name,) in con.execute("show tables").fetchall())
    finally:
        con.close()


def test_ingest_from_a_prefix_equals_the_local_ingest_of_its_files(s3_server, bucket, tmp_path):
    remote_dir, local_dir = tmp_path / "remote", tmp_path / "local"
    remote_dir.mkdir()
    (local_dir / "pool").mkdir(parents=True)
    for name in SCIENCE:
        shutil.copyfile(SAMPLE_POOL / name, local_dir / "pool" / name)

    remote = capsel(s3_server, remote_dir, "ingest", "s3://pool/science/", *READ_AS_SCIENCE, "--json")
    local = capsel(s3_server, local_dir, "ingest", "pool", *READ_AS_SCIENCE, "--json")
    assert remote.returncode == 0, remote.stderr
    assert local.returncode == 0, local.stderr
    remote_report, local_report = orjson.loads(remote.stdout), orjson.loads(local.stdout)
    assert [entry["path"] for entry in remote_report["files"]] == [f"s3://pool/science/{name}" for name in SCIENCE]
    assert remote_report["skipped"] == [
        {"path": "s3://pool/science/notes.txt", "reason": "not a .jsonl, .ndjson, .json, .parquet, .csv file"},
        {"path": "s3://pool/science/old", "reason": "a folder (folders inside a folder are not read)"},
    ]
    assert remote_report["domains"] == local_report["domains"] and remote_report["totals"]["n_inserted"] > 0

    remote_db, local_db = remote_dir / "capsel.duckdb", local_dir / "capsel.duckdb"
    for table in ("candidates", "duplicates", "quarantine"):
        assert rows(remote_db, table) == rows(local_db, table), table
    assert len(rows(remote_db, "candidates")) == remote_report["totals"]["n_inserted"]
    con = duckdb.connect(str(remote_db), read_only=True)
    try:
        sources = con.execute("select path, sha256, n_bytes, source_id from sources order by path").fetchall()
    finally:
        con.close()
    expected = []
    for name in SCIENCE:
        content = (SAMPLE_POOL / name).read_bytes()
        sha256 = hashlib.sha256(content).hexdigest()
        expected.append((f"s3://pool/science/{name}", sha256, len(content), sha256[:16]))
    assert sources == expected

    # the same objects again, named by a glob: known by their sha256, nothing new
    again = capsel(s3_server, remote_dir, "ingest", "s3://pool/science/science*", *READ_AS_SCIENCE)
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("skipped s3://pool/science/science") == 2 and "nothing new to ingest" in again.stdout

    for text in (remote.stdout, remote.stderr, again.stdout, again.stderr, every_value(remote_db)):
        assert SECRET not in text


def test_bad_urls_are_one_line_errors_that_keep_secrets_out(s3_server, bucket, tmp_path):
    missing = capsel(s3_server, tmp_path, "ingest", "s3://pool/nothing-here/", "--domain", "x")
    assert missing.returncode == 3
    assert missing.stderr.strip() == "error: s3://pool/nothing-here/: no such object or prefix"

    embedded = capsel(s3_server, tmp_path, "ingest", f"s3://capsel-test-key:{SECRET}@pool/science/science.csv")
    assert embedded.returncode == 3 and SECRET not in embedded.stdout + embedded.stderr
    assert embedded.stderr.startswith("error: s3://***@pool/science/science.csv: the URL holds credentials")
    assert not (tmp_path / "capsel.duckdb").exists()


def test_an_object_shows_its_download_then_its_ingest(s3_server, bucket, tmp_path, monkeypatch):
    for key, value in s3_server.env().items():
        if key.startswith("AWS_"):
            monkeypatch.setenv(key, value)
    size = (SAMPLE_POOL / "science.csv").stat().st_size
    calls: list[tuple[str, str, int, int]] = []
    con = open_db(tmp_path / "capsel.duckdb")
    try:
        ingest(con, ["s3://pool/science/science.csv"],
               IngestOptions(domain="science", fields=parse_field_map(["instruction=question", "response=answer"])),
               progress=lambda path, step, done, total: calls.append((str(path), step, done, total)))
    finally:
        con.close()
    steps = [step for _, step, _, _ in calls]
    assert steps == sorted(steps) and set(steps) == {"download", "ingest"}  # every download call before ingest's
    for step in ("download", "ingest"):
        done = [n for _, each, n, total in calls if each == step and total == size]
        assert len(done) == steps.count(step) and done == sorted(done) and done[-1] == size
    assert {path for path, *_ in calls} == {"s3://pool/science/science.csv"}
