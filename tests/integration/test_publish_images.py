"""Publishing a selection whose rows hold images: LlamaFactory's `images` column, the images copied once each,
the card and manifest listing them, and the gate refusing a selection whose image files are missing."""

import hashlib

import orjson
import pandas as pd
import pytest

from capsel.db import open_db
from capsel.image_store.store import ImageStore, image_store_dir
from capsel.publish.publish import GateFailedError, publish_selection
from capsel.selection.params import SelectionParams
from capsel.selection.plan import build_selection
from capsel.selection.scoring_key import resolve_scoring_key
from tests.support.image_pool import attach_images
from tests.support.scored_pool import make_pool

# code-00003 and math-00001 share image 2: it is copied once; math-00004 has two images, in that order
IMAGES_OF = {"code-00001": [1], "code-00003": [2], "math-00001": [2], "math-00004": [4, 3]}


@pytest.fixture
def store(tmp_path):
    db_path = tmp_path / "capsel.duckdb"
    con = open_db(db_path)
    make_pool(con, {"code": 8, "math": 8})
    stored = attach_images(con, db_path, IMAGES_OF)
    yield con, db_path, stored, tmp_path / "out"
    con.close()


def select_all(con):
    return build_selection(con, SelectionParams(budget="100%"), resolve_scoring_key(con))


def test_members_with_images_publish_in_llamafactory_format(store):
    con, db_path, stored, out_dir = store
    selection = select_all(con)
    root = publish_selection(con, selection, out_dir).path
    ids = selection.members["candidate_id"].tolist()

    expected = {cid: [f"images/{stored[i].sha256}.png" for i in IMAGES_OF.get(cid, [])] for cid in ids}
    records = [orjson.loads(line) for line in (root / "data.jsonl").read_bytes().splitlines()]
    assert all(list(record) == ["instruction", "input", "output", "images"] for record in records)
    assert [record["images"] for record in records] == [expected[cid] for cid in ids]
    # one <image> placeholder per image, as LlamaFactory's alpaca format expects
    assert all(record["instruction"].count("<image>") == len(record["images"]) for record in records)
    frame = pd.read_parquet(root / "data.parquet")
    assert [list(paths) for paths in frame["images"]] == [expected[cid] for cid in ids]

    info = orjson.loads((root / "dataset_info.json").read_bytes())
    assert info[root.name]["columns"] == {"prompt": "instruction", "query": "input", "response": "output",
                                          "images": "images"}

    # each distinct image once, byte for byte the stored file
    store_root = ImageStore(image_store_dir(db_path))
    copied = sorted(path.name for path in (root / "images").iterdir())
    assert copied == sorted(f"{image.sha256}.png" for image in stored.values())
    for image in stored.values():
        data = (root / "images" / f"{image.sha256}.png").read_bytes()
        assert hashlib.sha256(data).hexdigest() == image.sha256
        assert data == store_root.path(image.sha256, "png").read_bytes()

    manifest = orjson.loads((root / "manifest.json").read_bytes())
    total = sum(image.n_bytes for image in stored.values())
    assert manifest["images"] == {"count": 4, "n_bytes": total, "folder": "images/"}
    card = (root / "README.md").read_text()
    assert f"- `images/`: the 4 images the rows use ({total} bytes)" in card
    assert "exactly `instruction`, `input`, `output`, `images`" in card
    assert "- image-text-to-text" in card.split("---")[1], "the Hub task of a selection with pictures"

    validation = orjson.loads((root / "gate" / "validation.json").read_bytes())
    checks = validation["tables"]["images"]["results"] + validation["tables"]["image_rows"]["results"]
    assert len(checks) == 3 + 1 and all(check["success"] for check in checks)
    assert manifest["gate"]["n_expectations"] == sum(len(t["results"]) for t in validation["tables"].values())


def test_text_only_selection_has_no_images_anywhere(tmp_path):
    con = open_db(tmp_path / "capsel.duckdb")
    make_pool(con, {"code": 8})
    root = publish_selection(con, select_all(con), tmp_path / "out").path
    assert not (root / "images").exists()
    records = [orjson.loads(line) for line in (root / "data.jsonl").read_bytes().splitlines()]
    assert all(list(record) == ["instruction", "input", "output"] for record in records)
    assert "images" not in pd.read_parquet(root / "data.parquet").columns
    manifest = orjson.loads((root / "manifest.json").read_bytes())
    assert "images" not in manifest and "images" not in orjson.loads((root / "gate" / "validation.json").read_bytes())[
        "tables"]
    assert "images" not in (root / "dataset_info.json").read_text()
    assert "image-text-to-text" not in (root / "README.md").read_text()
    con.close()


def test_an_image_missing_from_the_store_fails_the_gate(store):
    con, db_path, stored, out_dir = store
    ImageStore(image_store_dir(db_path)).path(stored[3].sha256, "png").unlink()
    # another changed on disk since ingest: its bytes no longer hash to its name
    ImageStore(image_store_dir(db_path)).path(stored[1].sha256, "png").write_bytes(b"not the image")
    with pytest.raises(GateFailedError) as caught:
        publish_selection(con, select_all(con), out_dir)
    failures = caught.value.gate.failures
    assert any(f.startswith("images: expect_column_values_to_be_in_set(column='present'") for f in failures)
    assert not [p for p in out_dir.iterdir() if p.name.startswith("sel-")]
    assert con.table("selections").count("*").fetchall()[0][0] == 0
    text = " ".join(failures)
    assert f"images/{stored[3].sha256}.png" in text and f"images/{stored[1].sha256}.png" in text


def test_a_row_whose_placeholders_do_not_match_its_images_fails_the_gate(store):
    con, _, _, out_dir = store
    # LlamaFactory refuses such rows when it tokenizes: a text row with a literal placeholder, an image row without
    con.execute("update candidates set instruction = 'Describe <image> here' where candidate_id = 'code-00002'")
    con.execute("update candidates set instruction = replace(instruction, '<image>', '') "
                "where candidate_id = 'math-00004'")
    with pytest.raises(GateFailedError) as caught:
        publish_selection(con, select_all(con), out_dir)
    (failure,) = caught.value.gate.failures
    assert failure.startswith("image_rows: expect_column_pair_values_to_be_equal(column_A='n_images'")
    assert "2 unexpected of 16" in failure and "code-00002" in failure and "math-00004" in failure
