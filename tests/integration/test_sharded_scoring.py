"""Sharded scoring: workers compute, one writer merges each shard atomically, a rerun scores only what is left."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

import orjson
import pytest

from capsel.db import open_db
from capsel.orchestration.shard_worker import score_shard
from capsel.orchestration.sharded_scoring import keys_for, run_sharded_scoring
from capsel.orchestration.shards import plan_shards
from capsel.pipeline_config import ModelSpec
from capsel.scoring.config import ScoringConfig
from capsel.scoring.engine import ScoringEngine
from capsel.models.loading import load_model
from capsel.scoring.runner import run_scoring
from capsel.scoring.store import Scope
from tests.fixtures.candidates import mixed_candidates
from tests.fixtures.pool import append_candidates

BATCH = 4
CONFIG = ScoringConfig(prompt_format="raw")
SCORES = "select candidate_id, excluded_reason, n_aligned, d_early, d_late, ppl from divergences order by all"


@pytest.fixture(scope="module")
def spec(model_dir):
    return ModelSpec(path=str(model_dir), dtype="float32", device="cpu")


def _in_thread(executor, spec):
    return lambda work: executor.submit(score_shard, spec, CONFIG, BATCH, work)


def test_plan_covers_every_pending_candidate_once(con, info, pool):
    keys = keys_for(info, CONFIG)
    shards = plan_shards(con, keys, 5)
    ids = sorted(c["candidate_id"] for c in pool)
    assert [s.n_candidates for s in shards] == [5] * (len(ids) // 5) + ([len(ids) % 5] if len(ids) % 5 else [])
    assert [s.last_candidate_id for s in shards] == ids[4::5] + ([ids[-1]] if len(ids) % 5 else [])
    assert [s.after_candidate_id for s in shards] == [""] + [s.last_candidate_id for s in shards[:-1]]


def test_sharded_run_equals_the_unsharded_runner(tmp_path, con, spec, info, model_dir, pool):
    with ThreadPoolExecutor(2) as executor:
        summary = run_sharded_scoring(con, info, CONFIG, 5, _in_thread(executor, spec), max_in_flight=3)
    assert summary.n_processed == len(pool) and summary.n_already_done == 0

    reference = open_db(tmp_path / "reference.duckdb")
    append_candidates(reference, pool)
    run_scoring(reference, ScoringEngine(load_model(info), CONFIG, batch_size=BATCH))
    sharded, plain = con.execute(SCORES).fetchall(), reference.execute(SCORES).fetchall()
    reference.close()
    assert [row[:3] for row in sharded] == [row[:3] for row in plain]
    for left, right in zip(sharded, plain):
        if left[1] is None:
            assert left[3:] == pytest.approx(right[3:], rel=1e-5)

    runs = con.execute("select kind, status, parent_run_id, run_id, counters from runs order by started_at").fetchall()
    score_runs = [r for r in runs if r[0] == "score"]
    shard_runs = [r for r in runs if r[0] == "score_shard"]
    assert len(score_runs) == 1 and len(shard_runs) == 6 and {r[2] for r in shard_runs} == {score_runs[0][3]}
    assert sum(orjson.loads(r[4])["n_candidates"] for r in shard_runs) == len(pool)
    # every divergence row points at the shard run that committed it
    per_shard = dict(con.execute("select run_id, count(*) from divergences group by all").fetchall())
    assert per_shard == {r[3]: orjson.loads(r[4])["n_candidates"] for r in shard_runs}


def test_failed_shard_keeps_earlier_shards_and_rerun_finishes_exactly_once(con, spec, info, pool):
    calls = []

    def failing_third(work):
        calls.append(work.index)
        future = Future()
        if len(calls) == 3:
            future.set_exception(RuntimeError("worker lost"))
        else:
            future.set_result(score_shard(spec, CONFIG, BATCH, work))
        return future

    with pytest.raises(RuntimeError, match="worker lost"):
        run_sharded_scoring(con, info, CONFIG, 5, failing_third, max_in_flight=1)
    assert con.execute("select count(*) from divergences").fetchone()[0] == 10
    assert con.execute("select status from runs where kind = 'score'").fetchall() == [("failed",)]

    again = run_sharded_scoring(con, info, CONFIG, 5, lambda work: _done(score_shard(spec, CONFIG, BATCH, work)))
    assert again.n_already_done == 10 and again.n_processed == len(pool) - 10
    counts = con.execute("select candidate_id, count(*) from divergences group by all").fetchall()
    assert sorted(c for c, _ in counts) == sorted(c["candidate_id"] for c in pool)
    assert {n for _, n in counts} == {1}
    planned = orjson.loads(con.execute("select config from runs where kind = 'score' and status = 'completed'")
                           .fetchone()[0])
    assert planned["n_shards_planned"] == 4  # 18 left in shards of 5


def test_domain_scope_limits_the_plan(con, info):
    append_candidates(con, mixed_candidates(seed=5, prefix="z"), domain="code")
    shards = plan_shards(con, keys_for(info, CONFIG), 100, Scope(domain="code"))
    assert [s.n_candidates for s in shards] == [len(mixed_candidates())]


def _done(result) -> Future:
    future = Future()
    future.set_result(result)
    return future
