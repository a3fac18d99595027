"""Pending pages match a naive reference: the candidates in scope, minus those done, in id order, cut into pages."""

from __future__ import annotations

import random

import pandas as pd
import pytest

from capsel.db import open_db
from capsel.store.scope import PendingQuery, Scope, pending_pages
from tests.fixtures.pool import append_candidates

MODEL, CONFIG, GENERATION = "m", "ppl-config", "gen-config"
CAP_CONFIGS = ["cap-b", "cap-a"]
RESULT_KEY = {"method": "ppl", "model_fingerprint": MODEL, "config_hash": CONFIG}
RESULTS = PendingQuery("store/result_pending_bounds", "store/result_pending", RESULT_KEY,
                       {"generation_hash": GENERATION, "cap_config_hashes": CAP_CONFIGS})
# y-hat alone: the pseudo-method 'yhat' under the generation config
GENERATIONS = PendingQuery("store/result_pending_bounds", "store/result_pending",
                           {"method": "yhat", "model_fingerprint": MODEL, "config_hash": GENERATION},
                           {"generation_hash": GENERATION, "cap_config_hashes": []})
SCOPES = [Scope(), Scope(domain="code"), Scope(limit=17), Scope(domain="math", limit=9), Scope(limit=0)]


def hex_id(rng: random.Random) -> str:
    return f"{rng.getrandbits(80):020x}"


def append(con, table: str, rows: list[dict]) -> None:
    if rows:
        con.cursor().append(table, pd.DataFrame(rows), by_name=True)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Candidates of two domains in random id order, with results, y-hat and CAP rows stored interleaved among
    them (and rows under other keys, which count for nothing), each table appended in several unsorted bursts."""
    rng = random.Random(35)
    con = open_db(str(tmp_path_factory.mktemp("pending") / "pool.duckdb"))
    ids = [hex_id(rng) for _ in range(90)]
    append_candidates(con, [{"candidate_id": cid, "domain": rng.choice(["math", "code"]),
                             "instruction": f"q {cid}", "response": f"a {cid}"} for cid in ids])
    stored: set[tuple] = set()

    def new(table: str, rows: list[dict], *key: str) -> list[dict]:
        fresh = [row for row in rows if (table, *(row[name] for name in key)) not in stored]
        stored.update((table, *(row[name] for name in key)) for row in fresh)
        return fresh

    for burst in range(3):
        append(con, "method_scores", new("method_scores", [
            {"candidate_id": cid, "method": "ppl", "model_fingerprint": MODEL,
             "config_hash": CONFIG if i % 3 else "other-config", "score": 1.0, "run_id": f"r{burst}"}
            for i, cid in enumerate(rng.sample(ids, 30))
        ], "candidate_id", "config_hash"))
        append(con, "generations", new("generations", [
            {"candidate_id": cid, "model_fingerprint": MODEL if i % 4 else "other-model", "config_hash": GENERATION,
             "prompt_ids": [1, i], "response_ids": [2], "generated_ids": [3, burst],
             "excluded_reason": "short_prompt" if i % 5 == 0 else None, "generator": "hf", "run_id": f"r{burst}"}
            for i, cid in enumerate(rng.sample(ids, 25))
        ], "candidate_id", "model_fingerprint"))
        append(con, "divergences", new("divergences", [
            {"candidate_id": cid, "model_fingerprint": MODEL, "config_hash": config, "ppl": float(i),
             "excluded_reason": "short_response" if i % 7 == 0 else None, "run_id": f"r{burst}",
             "created_at": pd.Timestamp("2026-11-01") + pd.Timedelta(minutes=rng.randrange(3))}
            for i, cid in enumerate(rng.sample(ids, 25))
            for config in CAP_CONFIGS + ["cap-not-reused"]
        ], "candidate_id", "config_hash"))
    yield con
    con.close()


def done_ids(con) -> set[str]:
    return {row["candidate_id"] for row in table_rows(con, "method_scores")
            if (row["method"], row["model_fingerprint"], row["config_hash"]) == ("ppl", MODEL, CONFIG)}


def table_rows(con, table: str) -> list[dict]:
    relation = con.cursor().table(table)
    return [dict(zip(relation.columns, row)) for row in relation.fetchall()]


def reference_pages(con, scope: Scope, page_size: int, done: set[str]) -> list[list[dict]]:
    """Plain Python over the tables: in scope, not done, sorted by id, at most scope.limit, cut into pages."""
    candidates = sorted((row for row in table_rows(con, "candidates")
                         if scope.domain is None or row["domain"] == scope.domain), key=lambda row: row["candidate_id"])
    pending = [row for row in candidates if row["candidate_id"] not in done][:scope.limit]
    return [pending[start:start + page_size] for start in range(0, len(pending), page_size)]


def reference_result_pages(con, scope: Scope, page_size: int) -> list[list[dict]]:
    done = done_ids(con)
    generated = {row["candidate_id"]: row for row in table_rows(con, "generations")
                 if (row["model_fingerprint"], row["config_hash"]) == (MODEL, GENERATION)}
    cap: dict[str, dict] = {}
    for row in sorted(table_rows(con, "divergences"), key=lambda row: (row["created_at"], row["config_hash"])):
        if row["model_fingerprint"] == MODEL and row["config_hash"] in CAP_CONFIGS:
            cap.setdefault(row["candidate_id"], row)
    return [[{
        "candidate_id": row["candidate_id"], "instruction": row["instruction"], "input": row["input"],
        "response": row["response"],
        "has_generation": row["candidate_id"] in generated,
        "prompt_ids": generated.get(row["candidate_id"], {}).get("prompt_ids"),
        "response_ids": generated.get(row["candidate_id"], {}).get("response_ids"),
        "generated_ids": generated.get(row["candidate_id"], {}).get("generated_ids"),
        "generation_excluded_reason": generated.get(row["candidate_id"], {}).get("excluded_reason"),
        "has_cap": row["candidate_id"] in cap,
        "cap_ppl": cap.get(row["candidate_id"], {}).get("ppl"),
        "cap_excluded_reason": cap.get(row["candidate_id"], {}).get("excluded_reason"),
        "images": (),
    } for row in page] for page in reference_pages(con, scope, page_size, done)]


def reference_generation_pages(con, scope: Scope, page_size: int) -> list[list[dict]]:
    generated = {row["candidate_id"] for row in table_rows(con, "generations")
                 if (row["model_fingerprint"], row["config_hash"]) == (MODEL, GENERATION)}
    keys = ("candidate_id", "instruction", "input", "response")
    # nothing to reuse: a pending row has no y-hat of this config by definition, and y-hat reuses no CAP row
    nothing = {"has_generation": False, "prompt_ids": None, "response_ids": None, "generated_ids": None,
               "generation_excluded_reason": None, "has_cap": False, "cap_ppl": None, "cap_excluded_reason": None}
    return [[{**{key: row[key] for key in keys}, **nothing, "images": ()} for row in page]
            for page in reference_pages(con, scope, page_size, generated)]


def as_lists(pages: list[list[dict]]) -> list[list[dict]]:
    """Lists where DuckDB returns lists, so rows compare whatever sequence type either side used."""
    return [[{key: list(value) if isinstance(value, (list, tuple)) and key != "images" else value
              for key, value in row.items()} for row in page] for page in pages]


@pytest.mark.parametrize("scope", SCOPES, ids=repr)
@pytest.mark.parametrize("page_size", [1, 4, 100])
def test_result_pages_match_the_reference(store, scope, page_size):
    pages = list(pending_pages(store, RESULTS, scope, page_size))
    assert as_lists(pages) == as_lists(reference_result_pages(store, scope, page_size))


@pytest.mark.parametrize("scope", SCOPES, ids=repr)
@pytest.mark.parametrize("page_size", [1, 6, 100])
def test_generation_pages_match_the_reference(store, scope, page_size):
    pages = list(pending_pages(store, GENERATIONS, scope, page_size))
    assert as_lists(pages) == as_lists(reference_generation_pages(store, scope, page_size))


def test_the_fixture_interleaves_done_and_pending(store):
    """The pending ids are not one block: done and pending candidates alternate many times in id order."""
    done = done_ids(store)
    ids = sorted(row[0] for row in store.table("candidates").select("candidate_id").fetchall())
    flips = sum((a in done) != (b in done) for a, b in zip(ids, ids[1:]))
    assert 0 < len(done) < len(ids) and flips > 10


def test_what_is_written_while_paging_is_left_out_and_a_restart_resumes(tmp_path):
    """A run that writes each page's results before asking for the next, killed after two pages, then restarted,
    scores every candidate once; a result written meanwhile for a later page's candidate leaves it out."""
    rng = random.Random(4)
    con = open_db(str(tmp_path / "pool.duckdb"))
    ids = [hex_id(rng) for _ in range(40)]
    append_candidates(con, [{"candidate_id": cid, "instruction": "q", "response": "a"} for cid in ids])
    written: list[str] = []

    def write(candidate_ids: list[str]) -> None:
        append(con, "method_scores", [{"candidate_id": cid, "method": "ppl", "model_fingerprint": MODEL,
                                       "config_hash": CONFIG, "score": 0.0, "run_id": "r"} for cid in candidate_ids])
        written.extend(candidate_ids)

    first_run = pending_pages(con, RESULTS, Scope(), 6)
    for _ in range(2):
        write([row["candidate_id"] for row in next(first_run)])
    later = sorted(ids)[20]
    write([later])  # another writer's result, inside a window this run has not read yet
    assert later not in [row["candidate_id"] for page in first_run for row in page]
    assert len(written) == 13
    for page in pending_pages(con, RESULTS, Scope(), 6):  # the restart
        write([row["candidate_id"] for row in page])
    assert sorted(written) == sorted(ids)
