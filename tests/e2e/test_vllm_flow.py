"""A select flow with `runner.generator: vllm` on a real Prefect server: vLLM writes y-hat, HF scores, and the
stored generations, scores and members equal those of the same flow with the hf generator.

Runs under vLLM's CPU build (`make test-vllm`); skipped where vLLM cannot start.
"""

from __future__ import annotations

import duckdb
import pandas as pd
import pytest

from tests.fixtures.pool import tiny_model_dir
from tests.fixtures.vllm import requires_vllm
from tests.support.flow_pool import HORIZON, flow_config, write_pool_file

pytestmark = [pytest.mark.vllm, pytest.mark.e2e, pytest.mark.slow, requires_vllm]


def table(db, sql: str) -> pd.DataFrame:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.sql(sql).df()


def test_a_select_flow_generates_with_vllm_and_selects_what_hf_selects(prefect_api, tmp_path, monkeypatch):
    from capsel.flows.select_flow import select_flow

    monkeypatch.setenv("CAPSEL_VLLM_ENFORCE_EAGER", "1")  # torch.compile costs minutes on two cores
    # 64-dimensional heads (hidden 256): the smallest vLLM's attention kernels take
    model = tiny_model_dir(tmp_path / "model", "llama", HORIZON, hidden=256)
    pool = write_pool_file(tmp_path / "a.jsonl", 10, seed=1)
    reports = {}
    for generator in ("hf", "vllm"):
        (tmp_path / generator).mkdir()
        config = flow_config(tmp_path / generator, model, [str(pool)], runner={"generator": generator})
        reports[generator] = select_flow(**config.parameters())

    dbs = {generator: tmp_path / generator / "capsel.duckdb" for generator in reports}
    generations = "select candidate_id, prompt_ids, generated_ids, excluded_reason from generations order by 1"
    hf, vllm = (table(dbs[g], generations) for g in ("hf", "vllm"))
    assert len(vllm) == 20 and vllm.astype(str).equals(hf.astype(str))
    assert table(dbs["vllm"], "select distinct generator from generations")["generator"].tolist() == ["vllm"]
    assert table(dbs["hf"], "select distinct generator from generations")["generator"].tolist() == ["hf"]
    divergences = "select candidate_id, d_early, d_late from divergences order by 1"
    pd.testing.assert_frame_equal(table(dbs["vllm"], divergences), table(dbs["hf"], divergences), atol=1e-5, rtol=0)
    members = "select candidate_id from selection_members order by 1"
    assert table(dbs["vllm"], members).equals(table(dbs["hf"], members))
