"""Baseline shards: LESS features through the shard runner equal `run_baseline`'s; runs add up; reruns plan nothing."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace

import numpy as np
import orjson
import pytest

from capsel.baselines.less import scorer as less
from capsel.baselines.runner import run_baseline
from capsel.baselines.scorer import ScorerOptions
from capsel.db import open_db
from capsel.errors import CapselError
from capsel.orchestration.baseline_worker import score_baseline_shard
from capsel.orchestration.sharded_baselines import run_sharded_baseline
from capsel.scoring.store import Scope
from tests.fixtures.pool import append_candidates, tiny_model_dir

SHARD = 5
FEATURES = "select candidate_id, excluded_reason, feature from gradient_features order by candidate_id"


@pytest.fixture(scope="module")
def options(tmp_path_factory):
    model = tiny_model_dir(tmp_path_factory.mktemp("model") / "llama")
    return ScorerOptions(model=str(model), max_length=100, dtype="float32", device="cpu", batch_size=4)


def _done(result) -> Future:
    future = Future()
    future.set_result(result)
    return future


def test_less_shards_equal_run_baseline_and_runs_add_up(tmp_path, con, options, pool):
    with ThreadPoolExecutor(2) as executor:
        summary = run_sharded_baseline(
            con, less.from_options(options), SHARD,
            lambda work: executor.submit(score_baseline_shard, "less", options, work), max_in_flight=3,
        )
    assert summary.n_processed == len(pool) and summary.n_already_done == 0

    reference = open_db(tmp_path / "reference.duckdb")
    append_candidates(reference, pool)
    run_baseline(reference, less.from_options(options))
    sharded, plain = con.execute(FEATURES).fetchall(), reference.execute(FEATURES).fetchall()
    reference.close()
    assert [row[:2] for row in sharded] == [row[:2] for row in plain]
    assert any(row[1] for row in plain) and any(row[1] is None for row in plain)  # both kinds of row are compared
    for (_, reason, feature), (_, _, expected) in zip(sharded, plain):
        if reason is None:
            np.testing.assert_allclose(feature, expected, rtol=1e-5, atol=1e-7)

    runs = con.execute("select kind, parent_run_id, run_id, config, counters from runs order by started_at").fetchall()
    parents = [r for r in runs if r[0] == "score-baseline"]
    shards = [r for r in runs if r[0] == "score_shard"]
    assert len(parents) == 1 and len(shards) == -(-len(pool) // SHARD)
    assert {r[1] for r in shards} == {parents[0][2]}
    assert orjson.loads(parents[0][3])["n_shards_planned"] == len(shards)
    shard_counts = {r[2]: orjson.loads(r[4])["n_candidates"] for r in shards}
    assert sum(shard_counts.values()) == len(pool)
    # every feature row points at the shard run that committed it
    assert dict(con.execute("select run_id, count(*) from gradient_features group by all").fetchall()) == shard_counts
    n_excluded = sum(sum(orjson.loads(r[4])["n_excluded"].values()) for r in shards)
    assert n_excluded == sum(1 for row in plain if row[1]) == sum(orjson.loads(parents[0][4])["n_excluded"].values())

    calls = []
    again = run_sharded_baseline(con, less.from_options(options), SHARD, lambda work: calls.append(work))
    assert calls == [] and again.n_processed == 0 and again.n_already_done == len(pool)
    last = orjson.loads(con.execute(
        "select config from runs where kind = 'score-baseline' order by started_at desc limit 1").fetchone()[0])
    assert last["n_shards_planned"] == 0


def test_a_shard_from_another_model_is_refused_and_not_written(con, options):

    def other_model(work):
        return _done(replace(score_baseline_shard("less", options, work), model_fingerprint="other"))

    with pytest.raises(CapselError, match="scored by model other"):
        run_sharded_baseline(con, less.from_options(options), SHARD, other_model, max_in_flight=1,
                             scope=Scope(limit=SHARD))
    assert con.execute("select count(*) from gradient_features").fetchone()[0] == 0
    assert con.execute("select status from runs where kind = 'score-baseline'").fetchall() == [("failed",)]
