"""The one sharded runner, for CAP and a baseline alike: workers compute, one writer merges each shard atomically,
the result equals the in-process run, and a rerun scores only what is left."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace

import numpy as np
import orjson
import pytest

from capsel.db import open_db
from capsel.errors import CapselError
from capsel.methods.cap import CapSpec
from capsel.methods.less import LessSpec
from capsel.methods.registry import build_scorer
from capsel.methods.spec import ModelSpec
from capsel.runner.job import run_scorer
from capsel.runner.work import score_shard
from capsel.store.scope import Scope
from tests.fixtures.candidates import mixed_candidates
from tests.fixtures.pool import append_candidates

SHARD = 5
# what each method writes, and the run kind of its scoring runs
ROWS = {
    "cap": ("select candidate_id, excluded_reason, n_aligned, d_early, d_late, ppl from divergences order by all",
            "divergences", "score"),
    "less": ("select candidate_id, excluded_reason, feature from gradient_features order by all",
             "gradient_features", "score-baseline"),
}


@pytest.fixture(scope="module", params=["cap", "less"])
def spec(request, model_dir):
    model = ModelSpec(path=str(model_dir), dtype="float32", device="cpu", prompt_format="raw")
    return CapSpec(model=model, batch_size=4) if request.param == "cap" else LessSpec(model=model, max_length=100,
                                                                                          batch_size=4)


def _done(result) -> Future:
    future = Future()
    future.set_result(result)
    return future


def _same_rows(sharded, plain) -> None:
    assert [row[:2] for row in sharded] == [row[:2] for row in plain]
    assert any(row[1] for row in plain) and any(row[1] is None for row in plain)  # both kinds of row are compared
    for left, right in zip(sharded, plain):
        if left[1] is None:
            np.testing.assert_allclose(np.asarray(left[2:], dtype=float), np.asarray(right[2:], dtype=float),
                                       rtol=1e-5, atol=1e-7)


def test_sharded_run_equals_the_in_process_run_and_runs_add_up(tmp_path, con, spec, pool):
    query, table, kind = ROWS[spec.method]
    with ThreadPoolExecutor(2) as executor:
        summary = run_scorer(con, build_scorer(spec), dispatch=lambda work: executor.submit(score_shard, spec, work),
                             page_size=SHARD, max_in_flight=3)
    assert summary.n_processed == len(pool) and summary.n_already_done == 0

    reference = open_db(tmp_path / "reference.duckdb")
    append_candidates(reference, pool)
    run_scorer(reference, build_scorer(spec))
    _same_rows(con.execute(query).fetchall(), reference.execute(query).fetchall())
    reference.close()

    runs = con.execute("select kind, parent_run_id, run_id, config, counters from runs order by started_at").fetchall()
    parents = [r for r in runs if r[0] == kind]
    shards = [r for r in runs if r[0] == "score_shard"]
    assert len(parents) == 1 and len(shards) == -(-len(pool) // SHARD) and {r[1] for r in shards} == {parents[0][2]}
    assert orjson.loads(parents[0][3])["n_shards_planned"] == len(shards)
    shard_counts = {r[2]: orjson.loads(r[4])["n_candidates"] for r in shards}
    assert sum(shard_counts.values()) == len(pool)
    # every row points at the shard run that committed it
    assert dict(con.execute(f"select run_id, count(*) from {table} group by all").fetchall()) == shard_counts
    n_excluded = sum(sum(orjson.loads(r[4])["n_excluded"].values()) for r in shards)
    assert n_excluded == sum(orjson.loads(parents[0][4])["n_excluded"].values()) > 0

    calls = []
    again = run_scorer(con, build_scorer(spec), dispatch=calls.append, page_size=SHARD)
    assert calls == [] and again.n_processed == 0 and again.n_already_done == len(pool)


def test_failed_shard_keeps_earlier_shards_and_rerun_finishes_exactly_once(con, spec, pool):
    _, table, kind = ROWS[spec.method]
    calls = []

    def failing_third(work):
        calls.append(work.index)
        if len(calls) == 3:
            future = Future()
            future.set_exception(RuntimeError("worker lost"))
            return future
        return _done(score_shard(spec, work))

    with pytest.raises(RuntimeError, match="worker lost"):
        run_scorer(con, build_scorer(spec), dispatch=failing_third, page_size=SHARD, max_in_flight=1)
    assert con.execute(f"select count(*) from {table}").fetchone()[0] == 2 * SHARD
    assert con.execute(f"select status from runs where kind = '{kind}'").fetchall() == [("failed",)]

    again = run_scorer(con, build_scorer(spec), dispatch=lambda work: _done(score_shard(spec, work)), page_size=SHARD)
    assert again.n_already_done == 2 * SHARD and again.n_processed == len(pool) - 2 * SHARD
    counts = con.execute(f"select candidate_id, count(*) from {table} group by all").fetchall()
    assert sorted(c for c, _ in counts) == sorted(c["candidate_id"] for c in pool) and {n for _, n in counts} == {1}
    planned = orjson.loads(con.execute(f"select config from runs where kind = '{kind}' and status = 'completed'")
                           .fetchone()[0])
    assert planned["n_shards_planned"] == -(-(len(pool) - 2 * SHARD) // SHARD)


def test_a_shard_from_another_model_is_refused_and_not_written(con, spec):
    _, table, kind = ROWS[spec.method]

    def other_model(work):
        return _done(replace(score_shard(spec, work), model_fingerprint="other"))

    with pytest.raises(CapselError, match="scored by model other"):
        run_scorer(con, build_scorer(spec), Scope(limit=SHARD), dispatch=other_model, page_size=SHARD, max_in_flight=1)
    assert con.execute(f"select count(*) from {table}").fetchone()[0] == 0
    assert con.execute(f"select status from runs where kind = '{kind}'").fetchall() == [("failed",)]


def test_domain_scope_limits_the_shards(con, spec, pool):
    append_candidates(con, mixed_candidates(seed=5, prefix="z"), domain="code")
    works = []
    run_scorer(con, build_scorer(spec), Scope(domain="code"), dispatch=lambda work: works.append(work) or
               _done(score_shard(spec, work)), page_size=100)
    assert len(works) == 1 and len(works[0].items) + len(works[0].reused) == len(mixed_candidates())
