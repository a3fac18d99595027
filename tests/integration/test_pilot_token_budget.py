"""A pilot's token budget: each method takes, per domain, its top-ranked rows while their responses hold at most the
budget's tokens (on a real DuckDB store filled with a scored pool; a response's tokens counted as its words here)."""

from __future__ import annotations

import pytest

from capsel.config import load_settings
from capsel.db import open_db
from capsel.pilot.replicate import Replicate
from capsel.pilot.spec import PilotSpec
from capsel.selection.params import SelectionParams
from capsel.selection.plan import build_selection
from capsel.stages.select import SelectRequest, selection_key
from tests.support.scored_pool import make_pool


def words(text: str) -> int:
    return len(text.split())


@pytest.mark.parametrize("name,draw", [("cap", 0), ("random", 3)])
def test_the_rows_are_the_longest_top_ranked_prefix_within_the_tokens_in_every_domain(tmp_path, name, draw):
    folder = tmp_path / "replicate-0"
    folder.mkdir()
    con = open_db(folder / "capsel.duckdb")
    make_pool(con, {"math": 30, "code": 25}, seed=4)
    con.close()
    spec = PilotSpec(pool="x.jsonl", model="m", budgets=["40"], token_budget=True)
    with Replicate(spec, folder, load_settings(), folder / "subpool.jsonl") as replicate:
        rows = replicate._rows_within(40, name, draw, words)
        params = SelectionParams(budget="100%", seed=draw, method=name)
        ranked = build_selection(replicate.con, params,
                                 selection_key(replicate.ctx, SelectRequest(params, folder))).members
    # recomputed plainly: per domain, the running sum of words down the ranking; the fewest rows that fit
    fits = []
    for domain in ("code", "math"):
        total, count = 0, 0
        for response in ranked[ranked["domain"] == domain].sort_values("rank")["response"]:
            total += words(response)
            if total > 40:
                break
            count += 1
        fits.append(count)
    assert rows == max(1, min(fits))


def test_token_budgets_must_be_counts():
    with pytest.raises(ValueError, match="count of response tokens"):
        PilotSpec(pool="x.jsonl", model="m", budgets=["10%"], token_budget=True)
