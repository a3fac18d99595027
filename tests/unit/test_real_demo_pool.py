"""The demo's cut of the bundled real pool: sizes, junk share and kinds, near-duplicates after their source."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from capsel.ingest.dedup_key import dedup_key
from capsel_lab.demo_pool import POOL_FILE, read_pool
from capsel_lab.real_demo_pool import demo_records
from capsel_lab.real_pool import real_pool_dir


@pytest.fixture(scope="module")
def pool() -> list[dict]:
    return read_pool(real_pool_dir() / POOL_FILE)


@pytest.mark.parametrize("per_domain", [12, 50, 71])
def test_each_domain_gets_its_clean_rows_and_a_twentieth_of_junk_of_both_kinds(pool, per_domain):
    cut = demo_records(pool, per_domain)
    counts = Counter((r["domain"], r["lab_label"]) for r in cut)
    n_junk = math.floor(0.05 * per_domain + 0.5)
    for domain in ("math", "code"):
        assert counts[(domain, "clean")] == per_domain and counts[(domain, "junk")] == n_junk
        # the clean rows are the domain's first ones in file order
        first = [r["lab_id"] for r in pool if r["domain"] == domain and r["lab_label"] == "clean"][:per_domain]
        assert [r["lab_id"] for r in cut if r["domain"] == domain and r["lab_label"] == "clean"] == first
    kinds = Counter(r["lab_detail"].split(":")[0] for r in cut if r["lab_label"] == "junk")
    assert set(kinds) == {"salad", "shuffled"} and abs(kinds["salad"] - kinds["shuffled"]) <= 1


def test_near_duplicates_fold_into_the_row_before_them(pool):
    cut = demo_records(pool, 40)
    ids = {r["lab_id"]: index for index, r in enumerate(cut)}
    duplicates = [r for r in cut if r["lab_label"] == "duplicate"]
    assert Counter(r["domain"] for r in duplicates) == {"math": 1, "code": 1}
    for duplicate in duplicates:
        source = cut[ids[duplicate["lab_detail"].rsplit(":", 1)[1]]]
        assert ids[source["lab_id"]] < ids[duplicate["lab_id"]]
        assert (duplicate["instruction"], duplicate["input"]) != (source["instruction"], source["input"])
        assert dedup_key(duplicate["instruction"], duplicate["input"]) == dedup_key(source["instruction"], source["input"])
        assert duplicate["output"] == source["output"]


def test_the_cut_is_the_same_every_time(pool):
    assert demo_records(pool, 30) == demo_records(pool, 30)
