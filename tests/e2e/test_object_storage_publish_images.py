"""A multimodal selection published to a bucket on a real S3 server: its images/ go up with the rest, each
once, byte for byte the stored files, and the manifest still comes last."""

from __future__ import annotations

import hashlib

import orjson
import pytest

from capsel.db import open_db
from capsel.object_storage.remote_folder import RemoteFolder
from capsel.publish.publish import publish_selection
from capsel.selection.params import SelectionParams
from capsel.selection.plan import build_selection
from capsel.selection.scoring_key import resolve_scoring_key
from tests.support.image_pool import attach_images
from tests.support.s3_server import s3_filesystem
from tests.support.scored_pool import make_pool

pytestmark = pytest.mark.e2e

IMAGES_OF = {"code-00001": [1], "math-00002": [1, 2]}


def test_images_are_uploaded_with_the_selection(s3_server, tmp_path, monkeypatch):
    for name, value in s3_server.env().items():
        if name.startswith("AWS_"):
            monkeypatch.setenv(name, value)
    fs = s3_filesystem(s3_server)
    fs.mkdir("mmsels")
    db_path = tmp_path / "capsel.duckdb"
    con = open_db(db_path)
    make_pool(con, {"code": 5, "math": 5})
    stored = attach_images(con, db_path, IMAGES_OF)
    selection = build_selection(con, SelectionParams(budget="100%"), resolve_scoring_key(con))
    published = publish_selection(con, selection, RemoteFolder("s3://mmsels/out"))
    con.close()

    prefix = f"mmsels/out/{published.selection_id}"
    fs.invalidate_cache()
    uploaded = {key.removeprefix(prefix + "/") for key in fs.find(prefix)}
    expected = {f"images/{image.sha256}.png" for image in stored.values()}
    assert expected <= uploaded and {name for name in uploaded if name.startswith("images/")} == expected
    for image in stored.values():
        assert hashlib.sha256(fs.cat_file(f"{prefix}/images/{image.sha256}.png")).hexdigest() == image.sha256
    records = [orjson.loads(line) for line in fs.cat_file(f"{prefix}/data.jsonl").splitlines()]
    assert sorted(path for record in records for path in record["images"]) == sorted(
        f"images/{stored[i].sha256}.png" for indices in IMAGES_OF.values() for i in indices)
    assert orjson.loads(fs.cat_file(f"{prefix}/manifest.json"))["images"]["count"] == 2
