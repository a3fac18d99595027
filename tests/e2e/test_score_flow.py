"""`capsel-score`: LESS through the local runner and a local CPU Ray cluster equals the in-process run."""

from __future__ import annotations

import os

import numpy as np
import orjson
import pytest

from capsel.db import open_db
from capsel.methods.less.job import score_target
from capsel.methods.less.target import TargetFile
from capsel.methods.registry import build_scorer
from capsel.pipeline_config import ScoreFlowConfig
from capsel.runner.job import run_scorer
from tests.fixtures.candidates import mixed_candidates
from tests.fixtures.pool import append_candidates, tiny_model_dir

pytestmark = pytest.mark.e2e
FEATURES = "select candidate_id, excluded_reason, feature from gradient_features order by candidate_id"
SCORES = "select candidate_id, excluded_reason, score from method_scores where method = 'less' order by candidate_id"


def _pool_db(path, pool):
    con = open_db(path)
    append_candidates(con, pool)
    con.close()
    return path


def _rows(path):
    con = open_db(path, read_only=True)
    features, scores = con.execute(FEATURES).fetchall(), con.execute(SCORES).fetchall()
    workers = {orjson.loads(row[0])["worker"] for row in
               con.execute("select counters from runs where kind = 'score_shard'").fetchall()}
    con.close()
    return features, scores, workers


def _assert_same(rows, expected):
    assert [row[:2] for row in rows] == [row[:2] for row in expected]
    for (_, reason, value), (_, _, reference) in zip(rows, expected):
        if reason is None:
            np.testing.assert_allclose(value, reference, rtol=1e-5, atol=1e-7)


def test_less_flow_on_local_and_ray_runners_equals_the_in_process_run(prefect_api, tmp_path):
    from capsel.flows.score_flow import score_flow_for

    model = tiny_model_dir(tmp_path / "model" / "llama")
    pool = mixed_candidates() + mixed_candidates(seed=4, prefix="b")
    target = tmp_path / "target.jsonl"
    target.write_bytes(b"\n".join(orjson.dumps({"instruction": c["instruction"], "response": c["response"]})
                                  for c in mixed_candidates(seed=9)[2:6]))
    scoring = {"method": "less", "model": {"path": str(model), "dtype": "float32", "device": "cpu"},
               "max_length": 100, "batch_size": 4, "target": str(target), "target_max": 3}

    reference = open_db(_pool_db(tmp_path / "reference.duckdb", pool))
    scorer = build_scorer(ScoreFlowConfig(scoring=scoring).scoring)
    run_scorer(reference, scorer)
    score_target(reference, scorer, TargetFile.of(target, 3))
    reference.close()
    expected_features, expected_scores, _ = _rows(tmp_path / "reference.duckdb")

    runners = {"local": {"kind": "local", "max_workers": 2, "shard_size": 8},
               "ray": {"kind": "ray", "ray_num_cpus": 2, "num_gpus": 0, "max_in_flight": 3, "shard_size": 8}}
    for name, runner in runners.items():
        config = ScoreFlowConfig(scoring=scoring, db_path=str(_pool_db(tmp_path / f"{name}.duckdb", pool)),
                                 runner=runner)
        counters = score_flow_for(config)(config).counters()
        assert counters["score"]["n_processed"] == len(pool) and counters["target"]["target_computed"]
        assert counters["target"]["n_scores_written"] == len(pool)
        features, scores, workers = _rows(config.db_path)
        _assert_same(features, expected_features)
        _assert_same(scores, expected_scores)
        in_this_process = {worker for worker in workers if worker.endswith(f":{os.getpid()}")}
        assert in_this_process == (workers if name == "local" else set())  # Ray shards ran in worker processes

    again = score_flow_for(config)(config).counters()
    assert again["score"]["n_processed"] == 0 and again["score"]["n_already_done"] == len(pool)
    assert not again["target"]["target_computed"] and again["target"]["n_scores_written"] == 0
