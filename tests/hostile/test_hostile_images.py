"""Hostile pools (#32) through `capsel ingest` as a user types it, on real DuckDB files: rows whose images point at
devices, FIFOs, the machine's own network, other storage or files outside the pool are each quarantined with their
own reason, unopened and unfetched, while the file's good rows commit; a row's images stay within bounded memory;
a symlink in an ingested folder that leads out of it is not read."""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import duckdb
import orjson
import pytest
from PIL import Image

from tests.support.request_log_server import RequestLogServer

pytestmark = pytest.mark.e2e

# The checkout these tests belong to: its capsel is what the subprocesses must run, whatever the venv points at.
ROOT = Path(__file__).resolve().parents[2]
HOW = "name a folder or prefix holding it in CAPSEL_IMAGE_ROOTS or --image-root to allow it"
OFF = "network fetch is off: CAPSEL_IMAGE_URL_HOSTS names no host images may be fetched from"
PEAK_LIMIT_MIB = 400
# Runs capsel as its only child and reports that child's peak resident memory (KiB on Linux) on stderr's last line.
_MEASURED = ("import resource, subprocess, sys; code = subprocess.call(sys.argv[1:]); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(code)")


def png(color: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (5, 5), color).save(buffer, format="PNG")
    return buffer.getvalue()


RED, GREEN = png((255, 0, 0)), png((0, 255, 0))


@pytest.fixture(scope="module")
def big_png() -> bytes:
    """A 5.9 MB PNG of random pixels (it does not compress): a real image, just large."""
    buffer = io.BytesIO()
    Image.frombytes("RGB", (1400, 1400), random.Random(0).randbytes(1400 * 1400 * 3)).save(
        buffer, format="PNG", compress_level=0)
    return buffer.getvalue()


def environment(**settings: str) -> dict:
    base = {key: value for key, value in os.environ.items() if not key.startswith("CAPSEL_")}
    return {**base, "PYTHONPATH": str(ROOT), "COLUMNS": "250", **settings}


def capsel(*args: str, cwd: Path, **settings: str) -> subprocess.CompletedProcess:
    # the timeout is the test: a FIFO opened for reading would wait for a writer forever
    return subprocess.run([sys.executable, "-m", "capsel", *args], cwd=cwd, capture_output=True, text=True,
                          env=environment(**settings), timeout=120)


def measured_capsel(*args: str, cwd: Path, **settings: str) -> tuple[subprocess.CompletedProcess, float]:
    """The run and its peak resident memory in MiB."""
    done = subprocess.run([sys.executable, "-c", _MEASURED, sys.executable, "-m", "capsel", *args], cwd=cwd,
                          capture_output=True, text=True, env=environment(**settings), timeout=300)
    *rest, peak_kib = done.stderr.rstrip("\n").split("\n")
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout, "\n".join(rest)), int(peak_kib) / 1024


def write_rows(path: Path, images: list[object]) -> None:
    """One row per image field value, each with its own question."""
    lines = [json.dumps({**({"images": image} if isinstance(image, list) else {"image": image}),
                         "instruction": f"question {number}", "output": "answer"})
             for number, image in enumerate(images, 1)]
    path.write_text("\n".join(lines) + "\n")


def shown(ref: str) -> str:
    """A reference as a detail names it: whole up to 80 characters, else its head and its length."""
    return ref if len(ref) <= 80 else f"{ref[:80]}… ({len(ref):,} chars)"


def outcome(db: Path) -> tuple[dict[int, tuple[str, str]], list[int], int]:
    """Quarantine (row -> reason, detail), candidate rows, and how many images the database holds."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        quarantined = {row: (reason, detail) for row, reason, detail in
                       con.execute("select source_row, reason, detail from quarantine").fetchall()}
        candidates = sorted(row for (row,) in con.execute("select source_row from candidates").fetchall())
        n_images = con.execute("select count(*) from images").fetchone()[0]
    finally:
        con.close()
    return quarantined, candidates, n_images


def test_each_hostile_row_gets_its_own_reason_nothing_is_opened_or_fetched_and_the_good_rows_commit(
        tmp_path, request_log: RequestLogServer, big_png):
    pool = tmp_path / "pool"
    (pool / "img").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (pool / "img" / "red.png").write_bytes(RED)
    (pool / "img" / "big.png").write_bytes(big_png)
    secret = tmp_path.resolve() / "outside" / "secret.png"
    secret.write_bytes(GREEN)
    (pool / "img" / "link.png").symlink_to(secret)
    os.mkfifo(pool / "img" / "pipe.png")
    request_log.routes["/internal.png"] = (200, {"Content-Type": "image/png"}, GREEN)
    web, ftp = request_log.url("/admin/delete?all=1"), f"ftp://127.0.0.1:{request_log.port}/x.png"
    internal = request_log.url("/internal.png")
    schemes = ("only local files, data: URLs, the pool's own storage, storage under an image root "
               "(CAPSEL_IMAGE_ROOTS, --image-root) and http(s) hosts in CAPSEL_IMAGE_URL_HOSTS")
    rows = {
        "img/red.png": None,
        "/dev/zero": ("image_refused", f"/dev/zero is outside the pool's folder and the image roots; {HOW}"),
        "img/pipe.png": ("image_not_a_file", "a FIFO (named pipe), not a regular file: only regular files are read "
                                             "as images"),
        "img": ("image_not_a_file", "a folder, not a regular file: only regular files are read as images"),
        web: ("image_refused", OFF),
        internal: ("image_refused", OFF),
        ftp: ("image_refused", f"ftp:// is not a storage images are read from: {schemes}"),
        "../outside/secret.png": ("image_refused", f"{secret} is outside the pool's folder and the image roots; {HOW}"),
        str(secret): ("image_refused", f"{secret} is outside the pool's folder and the image roots; {HOW}"),
        f"file://{secret}": ("image_refused", f"{secret} is outside the pool's folder and the image roots; {HOW}"),
        "img/link.png": ("image_refused", f"a symlink to {secret}, outside the pool's folder and the image roots; "
                                          f"{HOW}"),
        "foo://x.png": ("image_refused", f"foo:// is not a storage images are read from: {schemes}"),
        "hdfs://namenode:8020/x.png": ("image_refused", f"hdfs:// is not a storage images are read from: {schemes}"),
        "zip://a.png::file:///etc/passwd": ("image_refused", "a chained URL (::), which reads through a second "
                                                             "storage; chained URLs are not read"),
        "s3://bucket/x.png": ("image_refused", f"s3:// is not a storage images are read from: {schemes}"),
    }
    images: list[object] = [*rows, ["img/big.png"] * 150, "img/red.png"]
    write_rows(pool / "pool.jsonl", images)

    done = capsel("ingest", "pool/pool.jsonl", "--domain", "vqa", "--json", cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    quarantined, candidates, n_images = outcome(tmp_path / "capsel.duckdb")
    expected = {number: (refusal[0], f"image 1 ({shown(ref)}): {refusal[1]}")
                for number, (ref, refusal) in enumerate(rows.items(), 1) if refusal is not None}
    expected[len(rows) + 1] = ("image_row_limit", "150 images, over the limit CAPSEL_MAX_IMAGES_PER_ROW=64")
    assert quarantined == expected
    assert candidates == [1, len(rows) + 2]  # the good rows around them commit
    assert n_images == 1  # red alone: nothing of the secret, the link or the web is stored
    assert (request_log.connections, request_log.requests) == (0, [])


def test_a_device_and_a_150_image_row_stay_within_bounded_memory(tmp_path, big_png):
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "red.png").write_bytes(RED)
    (tmp_path / "img" / "big.png").write_bytes(big_png)
    write_rows(tmp_path / "good.jsonl", ["img/red.png"])
    write_rows(tmp_path / "zero.jsonl", ["/dev/zero", "img/red.png"])
    write_rows(tmp_path / "many.jsonl", [["img/big.png"] * 150, "img/red.png"])

    baseline, base_mib = measured_capsel("ingest", "good.jsonl", "--domain", "vqa", "--db", "good.duckdb",
                                         cwd=tmp_path)
    # /dev under an image root, so the device itself is judged (without the root it is refused as outside)
    zero, zero_mib = measured_capsel("ingest", "zero.jsonl", "--domain", "vqa", "--db", "zero.duckdb",
                                     "--image-root", "/dev", cwd=tmp_path)
    # the count limit raised past 150, so the byte limit is what stops the row
    many, many_mib = measured_capsel("ingest", "many.jsonl", "--domain", "vqa", "--db", "many.duckdb", cwd=tmp_path,
                                     CAPSEL_MAX_IMAGES_PER_ROW="1000")
    print(f"\npeak RSS of `capsel ingest`: one good row {base_mib:.0f} MiB; /dev/zero row {zero_mib:.0f} MiB; "
          f"150 x {len(big_png) / 1e6:.1f} MB row {many_mib:.0f} MiB")

    for done in (baseline, zero, many):
        assert done.returncode == 0, done.stderr
    assert outcome(tmp_path / "zero.duckdb")[:2] == ({1: (
        "image_not_a_file", "image 1 (/dev/zero): a device, not a regular file: only regular files are read as images",
    )}, [2])
    held = 11 * len(big_png)  # eleven fit in 64 MiB, the twelfth is judged by its size before it is read
    assert outcome(tmp_path / "many.duckdb")[:2] == ({1: (
        "image_row_limit", f"image 12 (img/big.png): {len(big_png):,} bytes, which with the {held:,} bytes of the "
                           f"row's earlier images is over the row's limit CAPSEL_MAX_ROW_IMAGE_BYTES={64 * 2**20:,}",
    )}, [2])
    assert zero_mib < PEAK_LIMIT_MIB and many_mib < PEAK_LIMIT_MIB


def test_a_symlink_leading_out_of_an_ingested_folder_is_not_read(tmp_path):
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    (tmp_path / "elsewhere.jsonl").write_text('{"instruction": "planted", "output": "row"}\n')
    (incoming / "pool.jsonl").write_text('{"instruction": "q", "output": "a"}\n')
    (incoming / "passwd.jsonl").symlink_to("/etc/passwd")
    (incoming / "planted.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    (incoming / "again.jsonl").symlink_to(incoming / "pool.jsonl")  # a link inside the folder is read

    done = capsel("ingest", "incoming", "--domain", "vqa", "--json", cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    report = orjson.loads(done.stdout)
    assert {entry["path"]: entry["reason"] for entry in report["skipped"]} == {
        "incoming/passwd.jsonl": "a symlink to /etc/passwd, outside the folder: a folder gives only the files "
                                    "inside it",
        "incoming/planted.jsonl": f"a symlink to {tmp_path.resolve()}/elsewhere.jsonl, outside the folder: a "
                                     "folder gives only the files inside it",
    }
    assert sorted(Path(entry["path"]).name for entry in report["files"]) == ["again.jsonl", "pool.jsonl"]
    con = duckdb.connect(str(tmp_path / "capsel.duckdb"), read_only=True)
    try:
        paths = [Path(path).name for (path,) in con.execute("select path from sources").fetchall()]
        texts = con.execute("select string_agg(raw_text, '') from quarantine").fetchone()[0] or ""
        planted = con.execute("select count(*) from candidates where instruction = 'planted'").fetchone()[0]
    finally:
        con.close()
    assert paths == ["again.jsonl"]  # read first, by name; pool.jsonl holds the same bytes, a known source
    assert "root:" not in texts and planted == 0
    shown = capsel("ingest", "incoming", "--domain", "vqa", cwd=tmp_path)
    assert "not read incoming/passwd.jsonl: a symlink to /etc/passwd, outside the folder" in shown.stdout


def test_the_host_list_and_an_image_root_open_exactly_what_they_name(tmp_path, request_log: RequestLogServer):
    (tmp_path / "pool").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.png").write_bytes(GREEN)
    request_log.routes["/ok.png"] = (200, {"Content-Type": "image/png"}, RED)
    # an allowed host may not bounce capsel onto one that is not allowed
    request_log.routes["/hop.png"] = (302, {"Location": request_log.url("/ok.png", host="localhost")}, b"")
    write_rows(tmp_path / "pool" / "pool.jsonl", [
        request_log.url("/ok.png"), request_log.url("/gone.png"), request_log.url("/hop.png"),
        "../outside/secret.png",
    ])

    done = capsel("ingest", "pool/pool.jsonl", "--domain", "vqa", "--image-root", "outside", cwd=tmp_path, CAPSEL_IMAGE_URL_HOSTS=f"127.0.0.1:{request_log.port}")

    assert done.returncode == 0, done.stderr
    quarantined, candidates, n_images = outcome(tmp_path / "capsel.duckdb")
    hop = request_log.url("/hop.png")
    assert quarantined == {
        2: ("image_missing", f"image 1 ({request_log.url('/gone.png')}): HTTP 404 Not Found"),
        3: ("image_refused", f"image 1 ({hop}): redirected to {request_log.url('/ok.png', host='localhost')}, which "
                             "is not allowed (CAPSEL_IMAGE_URL_HOSTS)"),
    }
    assert candidates == [1, 4] and n_images == 2
    assert request_log.requests == [("GET", "/ok.png"), ("GET", "/gone.png"), ("GET", "/hop.png")]
