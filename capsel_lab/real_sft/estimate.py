"""How long the real-model SFT lab will take, from rates measured on this 2-core machine, counting only the work a
resumed run has left."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from capsel.selection.budget import parse_budget
from capsel_lab.real_sft.plan import POOL_RESULT, SCORED_MARK, pool_folder

# Measured here (capsel_lab/README.md): SmolLM2-135M-Instruct scores about 1.4 GSM8K candidates/s with CAP
# (float32, 2 threads), IFD about twice that; LlamaFactory's cpu-small profile trains about 2.5 s a row with its
# start-up near 45 s; held-out loss about 5 rows/s. Gemma 3 270M is about 2.5x slower.
SECONDS_PER_ROW = {"score": 1 / 1.4, "ifd": 1 / 2.8, "train": 2.5, "loss": 0.2}
TRAINER_START_S = 45.0
MODEL_FACTOR = {"gemma3-270m": 2.5}
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
        folder = pool_folder(out_dir, pool_seed)
        if (folder / POOL_RESULT).is_file():
            continue
        plan = spec.pool_plan(pool_seed)
        if not (folder / SCORED_MARK).is_file():
            scoring += rows * (SECONDS_PER_ROW["score"] + SECONDS_PER_ROW["ifd"])
        n_models = len(plan.methods) + plan.null_draws
        trained = len(list((folder / "models").glob("ft-*/manifest.json")))
        training += max(0, n_models - trained) * (TRAINER_START_S + share * rows * SECONDS_PER_ROW["train"])
        evaluation += (n_models + 1) * (spec.n_heldout * SECONDS_PER_ROW["loss"]
                                        + spec.n_gsm8k * GSM8K_S_PER_QUESTION)
    return Estimate(scoring * factor, training * factor, evaluation * factor)
