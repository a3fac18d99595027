"""`capsel demo --multimodal`: the drawn pool through the real select flow with a tiny VLM, checked file by file."""

from __future__ import annotations

import hashlib
from collections import Counter

import orjson
import pandas as pd
import pytest
from PIL import Image

from capsel.db import open_db
from capsel_lab.multimodal_pool import stage_multimodal_pool
from tests.support.demo_run import run_demo

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def multimodal_run(tmp_path_factory, prefect_server):
    folder, stdout = run_demo(tmp_path_factory, prefect_server, "--multimodal", "--budget", "25%", "--json",
                              folder="demo-multimodal")
    return folder, orjson.loads(stdout)


def test_every_row_is_a_candidate_a_duplicate_or_quarantined_with_its_image_reason(multimodal_run, tmp_path):
    folder, report = multimodal_run
    rows = stage_multimodal_pool(tmp_path)[1]
    labels = Counter(row["lab_label"] for row in rows)
    con = open_db(folder / "capsel.duckdb", read_only=True)
    try:
        n_candidates = con.execute("select count(*) from candidates").fetchone()[0]
        duplicates = con.execute("select count(*) from duplicates").fetchone()[0]
        reasons = Counter(dict(con.execute("select reason, count(*) from quarantine group by all").fetchall()))
        with_images = con.execute("select count(*) from candidates where len(image_sha256) > 0").fetchone()[0]
        n_images = con.execute("select count(*) from images").fetchone()[0]
        scored = con.execute("select count(*) from divergences where excluded_reason is null").fetchone()[0]
    finally:
        con.close()

    assert reasons == {"image_missing": 1, "image_unreadable": 1, "image_placeholder_mismatch": 1}
    # the repeated question over another picture merges into the first (the paper's key ignores images)
    assert duplicates == labels["duplicate"] == 1
    assert n_candidates == labels["clean"] == with_images
    assert n_candidates + duplicates + sum(reasons.values()) == len(rows)
    # 16 shapes and 16 labels, and the repeat's own picture: a duplicate row's images are stored too
    assert n_images == 33
    assert scored > 0
    funnel = {entry["stage"]: entry for entry in report["funnel"]}
    assert funnel["read"]["rows"] == len(rows)


def test_the_published_folder_holds_each_members_pictures_by_hash(multimodal_run):
    folder, report = multimodal_run
    (selection,) = sorted((folder / "selections").glob("sel-*"))
    manifest = orjson.loads((selection / "manifest.json").read_bytes())
    members = pd.read_parquet(selection / "data.parquet")
    info = orjson.loads((selection / "dataset_info.json").read_bytes())

    assert manifest["gate"]["success"] and len(members) == report["counts"]["selected"] > 0
    assert all(entry["columns"].get("images") == "images" for entry in info.values())
    for instruction, images in zip(members["instruction"], members["images"]):
        assert instruction.count("<image>") == len(images) >= 1
        for relative in images:
            data = (selection / relative).read_bytes()
            assert relative.split("/")[-1].split(".")[0] == hashlib.sha256(data).hexdigest()
            Image.open(selection / relative).verify()
