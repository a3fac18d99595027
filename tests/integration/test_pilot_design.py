"""A pilot's draw on a real DuckDB store as its pool: held-out rows and disjoint sub-pools, the same on a rerun, the
store read and never written."""

from __future__ import annotations

import json

from capsel.config import load_settings
from capsel.db import open_db
from capsel.pilot.design import draw
from capsel.pilot.spec import PilotSpec
from capsel.versioning import file_sha256
from tests.support.scored_pool import make_pool


def rows(path) -> list[dict]:
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def test_a_store_is_drawn_into_disjoint_sub_pools_and_held_out_rows_and_left_as_it_was(tmp_path):
    store = tmp_path / "mine.duckdb"
    con = open_db(store)
    tables = make_pool(con, {"math": 40, "code": 30}, seed=2)
    con.close()
    before = file_sha256(store)
    spec = PilotSpec(pool=str(store), model="m", replicates=3, heldout_rows=10)
    design = draw(spec, tmp_path / "pilot", load_settings())
    assert file_sha256(store) == before
    heldout = {row["instruction"] for row in rows(design.heldout)}
    subpools = [{row["instruction"] for row in rows(design.subpool(index))} for index in range(3)]
    assert len(heldout) == 10 and [len(pool) for pool in subpools] == [20, 20, 20]  # (70 - 10) / 3
    everything = [heldout, *subpools]
    assert all(not a & b for i, a in enumerate(everything) for b in everything[i + 1:])
    assert set().union(*everything) <= set(tables.candidates["instruction"])
    again = draw(spec, tmp_path / "pilot", load_settings())
    assert again == design
