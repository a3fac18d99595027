"""A published multimodal selection loaded by LlamaFactory's own dataset loader, images included.

LlamaFactory pins transformers and datasets below capsel's, so it lives in its own environment (`make
setup-llamafactory` builds .venv-lf; LLAMAFACTORY_PYTHON names another interpreter). Its loader runs in a
subprocess (tests/support/llamafactory_load.py); the test skips, saying how to build it, when it is missing.
"""

import hashlib
import io
import os
import subprocess
from pathlib import Path

import orjson
import pytest
from PIL import Image

from capsel.db import open_db
from capsel.image_store.store import ImageStore, image_store_dir
from capsel.publish.publish import publish_selection
from capsel.selection.params import SelectionParams
from capsel.selection.plan import build_selection
from capsel.selection.scoring_key import resolve_scoring_key
from tests.support.image_pool import attach_images
from tests.support.scored_pool import make_pool

REPO = Path(__file__).resolve().parents[2]
LOADER = REPO / "tests" / "support" / "llamafactory_load.py"  # run, never imported: it is not capsel's environment
LF_PYTHON = Path(os.environ.get("LLAMAFACTORY_PYTHON", REPO / ".venv-lf" / "bin" / "python"))
# code-00002 and math-00000 share image 5; math-00003 has two images
IMAGES_OF = {"code-00000": [1], "code-00002": [5], "math-00000": [5], "math-00003": [2, 7]}

pytestmark = pytest.mark.skipif(
    not LF_PYTHON.exists(),
    reason=f"LlamaFactory's environment is missing ({LF_PYTHON}): run `make setup-llamafactory`",
)


def test_llamafactory_loads_the_published_rows_and_their_images(tmp_path):
    db_path = tmp_path / "capsel.duckdb"
    con = open_db(db_path)
    make_pool(con, {"code": 6, "math": 6})
    stored = attach_images(con, db_path, IMAGES_OF)
    selection = build_selection(con, SelectionParams(budget="100%"), resolve_scoring_key(con))
    folder = publish_selection(con, selection, tmp_path / "out").path
    members = selection.members  # their text as the DB holds it, placeholders included
    con.close()

    loaded = subprocess.run(
        [str(LF_PYTHON), str(LOADER), str(folder), folder.name, str(tmp_path / "lf-cache")],
        capture_output=True, timeout=300, cwd=tmp_path,
    )
    assert loaded.returncode == 0, loaded.stderr.decode()[-3000:]
    result = orjson.loads(loaded.stdout.splitlines()[-1])
    assert result["media_dir"] == str(folder)
    rows = result["rows"]
    assert len(rows) == len(members) == 12

    store = ImageStore(image_store_dir(db_path))
    for row, member in zip(rows, members.itertuples()):
        # the alpaca columns as LlamaFactory maps them: instruction (+ "\n" + input) is the user turn
        prompt = member.instruction + ("\n" + member.input if member.input else "")
        assert row["_prompt"] == [{"role": "user", "content": prompt}]
        assert row["_response"] == [{"role": "assistant", "content": member.response}]
        indices = IMAGES_OF.get(member.candidate_id, [])
        if not indices:
            assert row["_images"] is None and row["decoded"] == []
            continue
        # each image resolved to the file copied into the folder, byte for byte the stored source
        assert row["_images"] == [str(folder / "images" / f"{stored[i].sha256}.png") for i in indices]
        for path, index, decoded in zip(row["_images"], indices, row["decoded"]):
            data = Path(path).read_bytes()
            assert hashlib.sha256(data).hexdigest() == stored[index].sha256
            assert data == store.path(stored[index].sha256, "png").read_bytes()
            with Image.open(io.BytesIO(data)) as source:
                rgb = source.convert("RGB")
            # what LlamaFactory's plugin opened is the same picture, pixel for pixel
            assert decoded == {"size": list(rgb.size), "rgb_sha256": hashlib.sha256(rgb.tobytes()).hexdigest()}
