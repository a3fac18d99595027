"""`--runner ray`: scoring shards as Ray tasks on a local CPU cluster give the local runner's scores."""

from __future__ import annotations

import os

import orjson
import pytest

from capsel.db import open_db
from capsel.methods.registry import build_scorer
from capsel.runner.job import run_scorer
from capsel.runner.window import Done
from capsel.runner.work import score_shard, workers_spec
from tests.fixtures.pool import append_candidates
from tests.support.flow_pool import flow_config, tiny_flow_model, write_pool_file

pytestmark = pytest.mark.e2e
SCORES = "select candidate_id, excluded_reason, n_aligned, layer_divergence, d_early, d_late, ppl from divergences"


def test_ray_shards_score_like_the_local_runner(prefect_api, tmp_path):
    from capsel.flows.select_flow import select_flow

    model = tiny_flow_model(tmp_path / "model")
    source = write_pool_file(tmp_path / "in" / "pool.jsonl", 10, seed=7)
    config = flow_config(tmp_path / "ray", model, [str(source)], selection={"budget": "3"},
                         runner={"kind": "ray", "ray_num_cpus": 2, "num_gpus": 0, "max_in_flight": 3})
    counters = select_flow(**config.parameters())
    assert counters["score"]["n_processed"] == 20

    con = open_db(tmp_path / "ray" / "capsel.duckdb", read_only=True)
    ray_scores = {row[0]: row[1:] for row in con.execute(SCORES).fetchall()}
    workers = {orjson.loads(row[0])["worker"] for row in
               con.execute("select counters from runs where kind = 'score_shard'").fetchall()}
    texts = con.execute("select candidate_id, instruction, input, response from candidates").fetchall()
    con.close()
    assert workers and all(not worker.endswith(f":{os.getpid()}") for worker in workers)  # Ray worker processes

    local = open_db(tmp_path / "local.duckdb")
    append_candidates(local, [dict(zip(("candidate_id", "instruction", "input", "response"), row)) for row in texts])
    spec = workers_spec(config.scoring, uses_gpus=False, local_cuda=False)
    run_scorer(local, build_scorer(spec), dispatch=lambda work: Done(score_shard(spec, work)),
               page_size=config.runner.shard_size)
    local_scores = {row[0]: row[1:] for row in local.execute(SCORES).fetchall()}
    local.close()
    assert ray_scores.keys() == local_scores.keys()
    for candidate_id, (reason, n_aligned, profile, *rest) in ray_scores.items():
        expected = local_scores[candidate_id]
        assert (reason, n_aligned) == expected[:2]
        assert profile == pytest.approx(expected[2], abs=1e-6) and rest == pytest.approx(list(expected[3:]), rel=1e-6)
