"""Empty-generation shares per domain (sql/store/generation_empty_by_domain.sql) and the prompt-format warning."""

from __future__ import annotations

import pandas as pd
import pytest

from capsel.cap_engine.format_check import EmptyGenerations, empty_generations, format_warnings
from capsel.db import open_db
from tests.fixtures.pool import append_candidates

# domain -> (generations of the key, empty ones); 1 of 5 is exactly the 20% limit, which does not warn
SHARES = {"code": (5, 1), "math": (19, 4), "science": (4, 0)}


@pytest.fixture()
def con():
    connection = open_db(":memory:")
    rows, candidates = [], []
    for domain, (n, n_empty) in SHARES.items():
        for index in range(n):
            candidate_id = f"{domain}-{index}"
            candidates.append({"candidate_id": candidate_id, "instruction": "q", "response": "a", "domain": domain})
            reason = "empty_generation" if index < n_empty else ("short_response" if index == n - 1 else None)
            rows.append((candidate_id, "model-a", "gen-1", reason))
            # the same candidates under another model and another config are all empty: never counted
            rows += [(candidate_id, "model-b", "gen-1", "empty_generation"),
                     (candidate_id, "model-a", "gen-2", "empty_generation")]
    append_candidates(connection, candidates)
    frame = pd.DataFrame(rows, columns=["candidate_id", "model_fingerprint", "config_hash", "excluded_reason"])
    frame["generator"], frame["run_id"] = "hf", "run"
    connection.append("generations", frame, by_name=True)
    yield connection
    connection.close()


def test_counts_follow_the_key_and_the_domain(con):
    counted = empty_generations(con, "model-a", "gen-1")
    assert counted == [EmptyGenerations(domain, n, n_empty) for domain, (n, n_empty) in sorted(SHARES.items())]


def test_only_domains_above_a_fifth_are_named_with_the_other_format(con):
    counted = empty_generations(con, "model-a", "gen-1")
    [raw] = format_warnings(counted, "raw")
    assert raw.startswith("math: 4 of 19 generations (21%) are empty_generation under prompt format raw")
    assert raw.endswith("try --prompt-format chat")
    [chat] = format_warnings(counted, "chat")
    assert chat.endswith("try --prompt-format raw")
    assert format_warnings(empty_generations(con, "model-a", "no-such-config"), "raw") == []
