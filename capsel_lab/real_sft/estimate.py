"""How long the real-model SFT lab will take, from rates measured on this 2-core machine, said before it starts."""

from __future__ import annotations

from dataclasses import dataclass

# Measured here (README, "Does the selection train a better model?"): SmolLM2-135M-Instruct scores about 1.4
# GSM8K candidates/s with CAP (float32, 2 threads), IFD about twice that; LlamaFactory's cpu-small profile trains
# about 2.5 s a row with its start-up near 45 s; held-out loss about 5 rows/s. Gemma 3 270M is about 2.5x slower.
SECONDS_PER_ROW = {"score": 1 / 1.4, "ifd": 1 / 2.8, "train": 2.5, "loss": 0.2}
TRAINER_START_S = 45.0
MODEL_FACTOR = {"gemma3-270m": 2.5}
GSM8K_S_PER_QUESTION = 48.0


@dataclass(frozen=True)
class Estimate:
    """Seconds per part of the run and in all."""

    scoring_s: float
    training_s: float
    evaluation_s: float

    @property
    def total_s(self) -> float:
        return self.scoring_s + self.training_s + self.evaluation_s


def estimate(model: str, n_pool: int, junk_share: float, n_heldout: int, n_gsm8k: int, budget_share: float,
             n_methods: int, n_seeds: int) -> Estimate:
    """The run's length: score the pool twice (CAP, IFD), train every selection per seed, evaluate every model."""
    factor = MODEL_FACTOR.get(model, 1.0)
    rows = n_pool * (1 + junk_share)
    scoring = rows * (SECONDS_PER_ROW["score"] + SECONDS_PER_ROW["ifd"])
    n_trainings = n_methods * n_seeds
    training = n_trainings * (TRAINER_START_S + budget_share * rows * SECONDS_PER_ROW["train"]) + n_seeds * (
        TRAINER_START_S + rows * SECONDS_PER_ROW["train"])
    n_models = n_trainings + n_seeds + 1
    evaluation = n_models * (n_heldout * SECONDS_PER_ROW["loss"] + n_gsm8k * GSM8K_S_PER_QUESTION)
    return Estimate(scoring * factor, training * factor, evaluation * factor)
