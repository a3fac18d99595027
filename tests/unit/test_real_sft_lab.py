"""The real-model SFT lab's data, its statistics across pools, and its estimate of the work left."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from capsel_lab.real_sft.estimate import estimate
from capsel_lab.real_sft.plan import BASE, POOL_RESULT, SCORED_MARK, finished_result, pool_folder
from capsel_lab.real_sft.pool import N_DEMONSTRATIONS, write_lab_files
from capsel_lab.real_sft.replicates import across_pools, method_means, null_rank, paired_t, sign_test
from capsel_lab.real_sft.spec import DEFAULT_METHODS, JUNK_FREE_METHODS, METHODS, RealSftSpec

ROOT = Path(__file__).resolve().parents[2]


def _questions(path) -> list[str]:
    return [json.loads(line).get("question") or json.loads(line)["instruction"]
            for line in path.read_text().splitlines()]


def test_heldout_and_demonstration_rows_are_disjoint_from_the_pool(tmp_path):
    files = write_lab_files(tmp_path, n_pool=30, n_heldout=12, junk_share=0.1, seed=3)
    pool = [json.loads(line) for line in files.pool.read_text().splitlines()]
    clean = {row["instruction"] for row in pool if row["lab_label"] == "clean"}
    assert len(clean) == 30 and sum(row["lab_label"] == "junk" for row in pool) == 3
    heldout, demos = _questions(files.heldout), _questions(files.demos)
    assert len(heldout) == 12 and len(demos) == N_DEMONSTRATIONS
    assert not clean & set(heldout) and not clean & set(demos) and not set(heldout) & set(demos)
    again = write_lab_files(tmp_path / "again", n_pool=30, n_heldout=12, junk_share=0.1, seed=3)
    assert again.heldout.read_text() == files.heldout.read_text()  # the same seed draws the same rows
    other = write_lab_files(tmp_path / "other", n_pool=30, n_heldout=12, junk_share=0.1, seed=4)
    assert other.pool.read_text() != files.pool.read_text()  # each pool seed a fresh draw


def _binomial_two_sided(k: int, n: int) -> float:
    # exact two-sided binomial p at 0.5: twice the smaller tail, at most 1
    tail = sum(math.comb(n, i) for i in range(0, min(k, n - k) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


@pytest.mark.parametrize("deltas", [[-0.02, -0.01, -0.03, -0.015, -0.004, -0.02],
                                    [-0.02, 0.01, -0.03, 0.015, -0.004, 0.0], [0.01, 0.02]])
def test_the_sign_test_is_an_exact_binomial_test_of_the_signs(deltas):
    below, above = sum(d < 0 for d in deltas), sum(d > 0 for d in deltas)
    test = sign_test(deltas)
    assert (test["n_lower"], test["n_higher"], test["n_tied"]) == (below, above, len(deltas) - below - above)
    assert test["p"] == pytest.approx(_binomial_two_sided(below, below + above))


def test_the_paired_t_test_is_the_one_sample_t_of_the_deltas():
    deltas = [-0.02, -0.01, -0.03, 0.005]
    mean = sum(deltas) / 4
    sd = math.sqrt(sum((d - mean) ** 2 for d in deltas) / 3)
    t = mean / (sd / 2)
    from scipy import stats

    assert paired_t(deltas) == pytest.approx(2 * stats.t.sf(abs(t), df=3))
    assert paired_t([0.01]) is None


def _pool(seed, losses, junk=0, null=()):
    models = [{"method": method, "loss": loss, "n_members": 20, "n_junk": junk, "response_tokens": 900}
              for method, loss in losses.items() if method != "base model"]
    models += [{"method": "random (null)", "loss": loss, "n_members": 20, "n_junk": 1, "response_tokens": 880}
               for loss in null]
    models.append({"method": "base model", "loss": losses["base model"]})
    deltas = [{"method": "cap", "against": "random", "delta": losses["cap"] - losses["random"], "ci95": [-1, 1],
               "verdict": "indistinguishable"}]
    return {"pool_seed": seed, "models": models, "deltas": deltas}


def test_across_pools_one_delta_per_pool_and_means_per_method():
    pools = [_pool(0, {"cap": 1.20, "random": 1.23, "base model": 1.34}, null=[1.22, 1.25, 1.19]),
             _pool(1, {"cap": 1.21, "random": 1.20, "base model": 1.35})]
    [row] = across_pools(pools)
    assert [pool["delta"] for pool in row["pools"]] == pytest.approx([-0.03, 0.01])
    assert row["mean_delta"] == pytest.approx(-0.01) and row["sign_test"]["n_lower"] == 1
    means = {row["method"]: row for row in method_means(pools)}
    assert means["cap"]["loss_mean"] == pytest.approx(1.205) and means["cap"]["n_pools"] == 2
    assert means["base model"]["loss_mean"] == pytest.approx(1.345) and "random (null)" not in means
    rank = null_rank(pools[0])
    # the random draws: the method's own (1.23) and the null's (1.22, 1.25, 1.19); CAP's 1.20 beats three of four
    assert (rank["rank"], rank["n_random"], rank["p"]) == (2, 4, pytest.approx(2 / 5))


def test_the_estimate_counts_only_the_work_left(tmp_path):
    spec = RealSftSpec(model="smollm2-135m-instruct", pools=3, null_draws=4)
    fresh = estimate(spec, tmp_path)
    assert fresh.total_s == pytest.approx(fresh.scoring_s + fresh.training_s + fresh.evaluation_s)
    _finish(tmp_path, spec, 1)  # pool 1 finished: a plain pool's share goes
    left = estimate(spec, tmp_path)
    assert left.scoring_s == pytest.approx(fresh.scoring_s * 2 / 3) and left.total_s < fresh.total_s
    gemma = estimate(RealSftSpec(model="gemma3-270m", pools=3, null_draws=4), tmp_path / "none")
    assert gemma.total_s == pytest.approx(1.9 * fresh.total_s)


def test_the_estimate_of_a_pool_is_within_a_quarter_of_what_the_committed_pools_recorded(tmp_path):
    # pools past the first (which also trains the random null) recorded their runs' seconds in the result file
    result = json.loads((ROOT / "docs" / "lab" / "real_sft_smollm2-135m-instruct-junk5.json").read_text())
    recorded = sorted(pool["recorded_s"] for pool in result["pools"][1:])
    one_pool = RealSftSpec(**{**result["spec"], "pools": 1, "first_pool": 1, "null_draws": 0})
    assert estimate(one_pool, tmp_path).total_s == pytest.approx(recorded[len(recorded) // 2], rel=0.25)


def test_the_methods_follow_the_arm_and_a_late_split_adds_one():
    assert list(RealSftSpec(model="m").method_options()) == list(DEFAULT_METHODS)
    assert list(RealSftSpec(model="m", junk_share=0).method_options()) == list(JUNK_FREE_METHODS)
    split = RealSftSpec(model="m", late="last:3").method_options()
    assert split == {**{name: METHODS[name] for name in DEFAULT_METHODS},
                     "cap, late last:3": {"method": "cap", "late": "last:3"}}
    plans = [RealSftSpec(model="m", pools=3, first_pool=5).pool_plan(seed) for seed in (5, 6, 7)]
    assert [plan.null_draws for plan in plans] == [20, 0, 0] and [p.pool_seed for p in plans] == [5, 6, 7]
    assert {plan.train_seed for plan in plans} == {0}  # the trainer's seed is not the pool's


def _finish(out_dir: Path, spec: RealSftSpec, pool_seed: int, null_draws: int | None = None) -> None:
    """A pool.json holding each model `spec` (with `null_draws` instead of its own, if given) asks of the pool."""
    plan = spec.pool_plan(pool_seed)
    if null_draws is not None:
        plan = replace(plan, null_draws=null_draws)
    models = [{"method": name, "selection_seed": seed} for name, _, seed in plan.asked()] + [{"method": BASE}]
    pool_folder(out_dir, pool_seed).mkdir(parents=True)
    (pool_folder(out_dir, pool_seed) / POOL_RESULT).write_text(json.dumps({"models": models}))


def test_a_pool_finished_without_the_null_is_run_again_for_it(tmp_path):
    spec = RealSftSpec(model="smollm2-135m-instruct", pools=2, null_draws=3)
    _finish(tmp_path, spec, 0, null_draws=0)  # pool 0 ran without the null; pool 1 has none to run
    _finish(tmp_path, spec, 1)
    assert finished_result(pool_folder(tmp_path, 0), spec.pool_plan(0)) is None
    assert finished_result(pool_folder(tmp_path, 1), spec.pool_plan(1)) is not None
    (pool_folder(tmp_path, 0) / SCORED_MARK).write_text("scored\n")
    for name, _, seed in replace(spec.pool_plan(0), null_draws=0).asked():  # each method's model is trained
        model = pool_folder(tmp_path, 0) / "models" / f"ft-{name}-{seed}"
        model.mkdir(parents=True)
        (model / "manifest.json").write_text("{}")
    one = estimate(RealSftSpec(model="smollm2-135m-instruct", pools=1, null_draws=0), tmp_path / "none")
    per_model = one.training_s / len(spec.pool_plan(0).methods)
    left = estimate(spec, tmp_path)
    assert left.scoring_s == 0 and left.training_s == pytest.approx(3 * per_model)  # only the null's three
    assert finished_result(pool_folder(tmp_path, 0), replace(spec.pool_plan(0), null_draws=0)) is not None
