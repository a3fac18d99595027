"""The members digest behind a selection id, against sha256 over the lines written out one by one here."""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone

import pandas as pd

from capsel.publish.selection_id import members_digest, new_selection_id


def naive_digest(rows: list[tuple[str, int, str]]) -> str:
    text = "".join(f"{domain}\t{rank}\t{candidate_id}\n" for domain, rank, candidate_id in rows)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_the_digest_hashes_each_members_domain_rank_and_id_in_order():
    rows = [("math", 1, "m-1"), ("math", 2, "m-7"), ("cödé ✓", 1, "c-3"), ("cödé ✓", 12, "c\t9")]
    members = pd.DataFrame(rows, columns=["domain", "rank", "candidate_id"]).assign(z=[2.0, 1.0, 3.0, 0.5])
    assert members_digest(members) == naive_digest(rows)
    assert members_digest(members.iloc[::-1]) == naive_digest(rows[::-1]) != naive_digest(rows)


def test_no_members_hash_the_empty_text():
    empty = pd.DataFrame({"domain": pd.Series([], dtype=str), "rank": pd.Series([], dtype="int64"),
                          "candidate_id": pd.Series([], dtype=str)})
    assert members_digest(empty) == hashlib.sha256(b"").hexdigest()


def test_the_id_carries_the_utc_time_and_the_digests_first_8_hex():
    created = datetime(2026, 11, 29, 13, 5, 9, tzinfo=timezone.utc)
    assert new_selection_id("0123456789abcdef", created) == "sel-20261129T130509Z-01234567"
