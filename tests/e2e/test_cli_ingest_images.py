"""`capsel ingest` of rows with images as a user types it: --dedup-key, lineage and quarantine showing the images,
and a pool in S3 whose rows name their images relative to it."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import orjson
import pytest
from PIL import Image

from capsel.image_store.store import ImageStore, image_store_dir
from tests.support.s3_server import S3Server, s3_filesystem

pytestmark = pytest.mark.e2e


def png(color: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (5, 5), color).save(buffer, format="PNG")
    return buffer.getvalue()


RED, GREEN = png((255, 0, 0)), png((0, 255, 0))
ROWS = [
    {"image": "img/red.png", "instruction": "What colour?", "output": "red"},
    {"image": "img/green.png", "instruction": "What colour?", "output": "green"},
    {"image": "img/gone.png", "instruction": "Where is it?", "output": "gone"},
]


def capsel(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    base = env or {key: value for key, value in os.environ.items() if not key.startswith("CAPSEL_")}
    return subprocess.run([sys.executable, "-m", "capsel", *args], cwd=cwd, capture_output=True, text=True,
                          env={**base, "COLUMNS": "1000"}, timeout=120)


def write_pool(folder: Path) -> None:
    (folder / "img").mkdir(parents=True)
    (folder / "img" / "red.png").write_bytes(RED)
    (folder / "img" / "green.png").write_bytes(GREEN)
    (folder / "pool.jsonl").write_text("".join(json.dumps(row) + "\n" for row in ROWS))


@pytest.mark.parametrize(("mode", "n_inserted", "n_duplicates"), [("text", 1, 1), ("text+images", 2, 0)])
def test_dedup_key_option_lineage_and_quarantine(tmp_path, mode, n_inserted, n_duplicates):
    write_pool(tmp_path)
    args = ["--db", "pool.duckdb"]
    result = capsel("ingest", "pool.jsonl", "--domain", "vqa", "--dedup-key", mode, "--json", *args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    totals = orjson.loads(result.stdout)["totals"]
    assert (totals["n_inserted"], totals["n_duplicates"], totals["n_quarantined"]) == (n_inserted, n_duplicates, 1)
    con = duckdb.connect(str(tmp_path / "pool.duckdb"), read_only=True)
    try:
        first_id = con.table("candidates").df().set_index("source_row").loc[1, "candidate_id"]
    finally:
        con.close()
    lineage = capsel("lineage", first_id, *args, cwd=tmp_path)
    assert lineage.returncode == 0, lineage.stderr
    red = hashlib.sha256(RED).hexdigest()
    path = ImageStore(image_store_dir(tmp_path / "pool.duckdb")).path(red, "png")
    assert f"1. sha256 {red}: png 5x5, {len(RED):,} bytes, {path}" in lineage.stdout
    assert path.read_bytes() == RED
    quarantine = capsel("quarantine", "--reason", "image_missing", *args, cwd=tmp_path)
    assert "image 1 (img/gone.png): no such file" in quarantine.stdout
    assert "image_missing: an image's file or URL does not exist" in quarantine.stdout


def test_a_mistyped_dedup_key_is_one_line(tmp_path):
    write_pool(tmp_path)
    result = capsel("ingest", "pool.jsonl", "--domain", "vqa", "--dedup-key", "images", cwd=tmp_path)
    assert result.returncode != 0
    assert len(result.stderr.strip().splitlines()) == 1 and "--dedup-key" in result.stderr
    assert "text+images" in result.stderr


def test_images_beside_a_pool_in_s3_are_read_from_storage(s3_server: S3Server, tmp_path):
    """Images under the pool's own prefix are read, and elsewhere in storage only under an --image-root."""
    fs = s3_filesystem(s3_server)
    fs.mkdir("vqa")
    fs.pipe_file("vqa/pool/img/red.png", RED)
    fs.pipe_file("vqa/elsewhere/green.png", GREEN)
    fs.pipe_file("vqa/secret/blue.png", png((0, 0, 255)))
    rows = [{"image": "img/red.png", "instruction": "relative", "output": "a"},
            {"image": "s3://vqa/elsewhere/green.png", "instruction": "absolute URL", "output": "b"},
            {"image": "img/gone.png", "instruction": "missing", "output": "c"},
            {"image": "s3://vqa/secret/blue.png", "instruction": "not under a root", "output": "d"}]
    fs.pipe_file("vqa/pool/pool.jsonl", "".join(json.dumps(row) + "\n" for row in rows).encode())
    result = capsel("ingest", "s3://vqa/pool/pool.jsonl", "--domain", "vqa", "--image-root", "s3://vqa/elsewhere/",
                    "--json", cwd=tmp_path, env=s3_server.env())
    assert result.returncode == 0, result.stderr
    totals = orjson.loads(result.stdout)["totals"]
    assert (totals["n_inserted"], totals["n_quarantined"]) == (2, 2)
    store = ImageStore(image_store_dir(tmp_path / "capsel.duckdb"))
    for data in (RED, GREEN):
        assert store.path(hashlib.sha256(data).hexdigest(), "png").read_bytes() == data
    quarantine = capsel("quarantine", "--json", cwd=tmp_path, env=s3_server.env())
    rows_out = {row["detail"].split(")", 1)[0]: (row["reason"], row["detail"])
                for row in orjson.loads(quarantine.stdout)["rows"]}
    assert rows_out["image 1 (img/gone.png"] == ("image_missing", "image 1 (img/gone.png): no such object")
    assert rows_out["image 1 (s3://vqa/secret/blue.png"] == (
        "image_refused", "image 1 (s3://vqa/secret/blue.png): outside the pool's storage prefix and the image roots; "
        "name a folder or prefix holding it in CAPSEL_IMAGE_ROOTS or --image-root to allow it")
