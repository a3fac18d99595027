"""How long the real-model SFT lab will take, from rates measured on this 2-core machine, counting only the work a
resumed run has left."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from capsel.selection.budget import parse_budget
from capsel_lab.real_sft.plan import SCORED_MARK, finished_result, pool_folder

# Fitted to the runs the lab's pools recorded on this 2-core machine (each pool's database, `runs` by kind; pools
# that shared their cores with tests left out): SmolLM2-135M-Instruct scores about 1.4 candidates/s with CAP and
# 1 s a candidate with PPL and IFD together (float32, 2 threads); a cpu-small fine-tune on 20-21 rows takes about
# 40 s in all (only that size was measured, so the split between start-up and rows is a guess); held-out loss
# about 0.5 s a row and model. Gemma 3 270M took about 1.9 times as long over its first two pools (parts from 1.4x
# for CAP to 2.2x for the loss).
SECONDS_PER_ROW = {"score": 1 / 1.4, "baselines": 1.0, "train": 0.7, "loss": 0.5}
TRAINER_START_S = 25.0
MODEL_FACTOR = {"gemma3-270m": 1.9}
GSM8K_S_PER_QUESTION = 48.0


@dataclass(frozen=True)
class Estimate:
    """Seconds per part of the work left, and in all."""

    scoring_s: float
    training_s: float
    evaluation_s: float

    @property
    def total_s(self) -> float:
        return self.scoring_s + self.training_s + self.evaluation_s


def estimate(spec, out_dir: Path) -> Estimate:
    """The work `spec` has left in `out_dir`: pools not yet scored, models not yet trained, pools not evaluated."""
    factor = MODEL_FACTOR.get(spec.model, 1.0)
    rows = spec.n_pool * (1 + spec.junk_share)
    budget = parse_budget(spec.budget, "per_domain")
    share = float(budget.percent) / 100 if budget.percent is not None else (budget.count or 0) / spec.n_pool
    scoring = training = evaluation = 0.0
    for pool_seed in spec.pool_seeds():
        folder, plan = pool_folder(out_dir, pool_seed), spec.pool_plan(pool_seed)
        if finished_result(folder, plan) is not None:
            continue
        if not (folder / SCORED_MARK).is_file():
            scoring += rows * (SECONDS_PER_ROW["score"] + SECONDS_PER_ROW["baselines"])
        n_models = len(plan.methods) + plan.null_draws
        trained = len(list((folder / "models").glob("ft-*/manifest.json")))
        training += max(0, n_models - trained) * (TRAINER_START_S + share * rows * SECONDS_PER_ROW["train"])
        evaluation += (n_models + 1) * (spec.n_heldout * SECONDS_PER_ROW["loss"]
                                        + spec.n_gsm8k * GSM8K_S_PER_QUESTION)
    return Estimate(scoring * factor, training * factor, evaluation * factor)
