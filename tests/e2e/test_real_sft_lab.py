"""The replicated real-model lab end to end on a tiny model: two pools, each a fresh draw, CAP and random selected,
fine-tuned with LlamaFactory and evaluated, two more random subsets on the first pool; every figure of
real_sft.json recomputed from the pools' own stores, and a rerun resumes without training again."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pytest

from capsel.config import load_settings
from capsel_lab.real_sft.experiment import run_real_sft
from capsel_lab.real_sft.plan import pool_folder
from capsel_lab.real_sft.spec import RealSftSpec
from tests.integration.test_finetune_llamafactory import FOUND, LF_PYTHON
from tests.reference.naive_bootstrap import naive_paired_interval
from tests.support.finetune_fixtures import tiny_base_model

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(
    FOUND is None, reason=f"LlamaFactory's environment is missing ({LF_PYTHON}): run `make setup-llamafactory`")]


def _rows_of(folder, finetune_id: str) -> tuple[np.ndarray, np.ndarray]:
    """A model's stored per-row NLL sums and tokens, read with plain SQL."""
    con = duckdb.connect(str(folder / "capsel.duckdb"), read_only=True)
    rows = con.execute("select r.outcome, r.weight from evaluation_rows r join evaluations e using "
                       "(model_fingerprint, eval_kind, eval_file_sha256, eval_config_hash) where e.domain = '*' "
                       "and e.target = ? order by r.row_index", [finetune_id]).fetchall()
    con.close()
    return np.array([row[0] for row in rows]), np.array([row[1] for row in rows])


def test_two_pools_tested_across_and_cap_ranked_among_random_subsets(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPSEL_TRAINER_PYTHON", str(LF_PYTHON))
    monkeypatch.setenv("CAPSEL_THREADS", "1")
    base = tiny_base_model(tmp_path / "base", layers=4)
    spec = RealSftSpec(model=str(base), pools=2, first_pool=3, n_pool=20, n_heldout=8, junk_share=0.1,
                       budget="25%", null_draws=2, methods=("cap", "random"))
    out = tmp_path / "lab"
    said: list[str] = []
    result = run_real_sft(spec, out, load_settings(), say=said.append)
    summary = json.loads(result.path.read_text())
    assert [pool["pool_seed"] for pool in summary["pools"]] == [3, 4]

    for pool in summary["pools"]:
        folder = pool_folder(out, pool["pool_seed"])
        models = {(m["method"], m.get("selection_seed")): m for m in pool["models"]}
        cap, random = models["cap", 0], models["random", 0]
        assert cap["n_members"] == random["n_members"] == 6 and cap["response_tokens"] > 0  # 25% of 22, up
        # 6 rows at 2 a step make 3 steps an epoch, the first at a rate of 0: 4 epochs reach 10 steps that learn
        for model in (cap, random):
            assert (model["epochs"], model["optimizer_steps"], model["learning_steps"]) == (4, 12, 11)
            assert model["final_train_loss"] > 0
        [delta] = pool["deltas"]
        cap_nll, tokens = _rows_of(folder, cap["target"])
        random_nll, random_tokens = _rows_of(folder, random["target"])
        assert np.array_equal(tokens, random_tokens) and len(tokens) == 8
        assert delta["delta"] == pytest.approx(cap_nll.sum() / tokens.sum() - random_nll.sum() / tokens.sum())
        assert delta["ci95"] == pytest.approx(naive_paired_interval(cap_nll, tokens, random_nll, tokens, 2000, 0))
        assert cap["loss"] == pytest.approx(cap_nll.sum() / tokens.sum())
    # the null: pool 3's own random draw and two more, each a model of its own
    null = summary["null"]
    first = summary["pools"][0]["models"]
    randoms = sorted(m["loss"] for m in first if m["method"] in ("random", "random (null)"))
    assert null["n_random"] == 3 and null["random_losses"] == pytest.approx(randoms)
    cap_loss = next(m["loss"] for m in first if m["method"] == "cap")
    assert null["rank"] == 1 + sum(loss < cap_loss for loss in randoms)
    assert len({m["target"] for m in first}) == len(first)  # 4 fine-tunes and the base model, all distinct
    [across] = summary["comparisons"]
    deltas = [pool["deltas"][0]["delta"] for pool in summary["pools"]]
    assert [p["delta"] for p in across["pools"]] == pytest.approx(deltas)
    assert across["sign_test"]["n_lower"] == sum(d < 0 for d in deltas)

    said.clear()
    again = json.loads(run_real_sft(spec, out, load_settings(), say=said.append).path.read_text())
    assert not [line for line in said if "fine-tuning" in line or "scoring" in line]  # all of it kept
    assert again["pools"] == summary["pools"] and len(again["runs_wall_s"]) == 2
