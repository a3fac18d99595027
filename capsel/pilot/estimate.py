"""What a pilot will cost, before it runs, from rates measured on a 2-core machine and scaled by the model's size;
the run records what it took beside it.

Rates of SmolLM2-135M-Instruct in float32 on 2 cores (capsel_lab's real-model runs, `runs` by kind): CAP scores
1.4 candidates/s, PPL and IFD about 2 together; a cpu-small fine-tune trains 0.7 s a row, held-out loss takes 0.5 s
a row and model. A model of W bytes of float32 weights is taken to cost W / 540 MB times as much (Gemma 3 270M
measured 1.9 times), a machine of C cores 2 / C times. What does not grow with the model does not scale: the
trainer's start (about 25 s of imports) and a model's load for its evaluation (about 5 s).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from capsel.finetune.recipe import resolve_recipe
from capsel.finetune.schedule import schedule
from capsel.pilot.design import Design
from capsel.pilot.spec import PilotSpec
from capsel.selection.budget import parse_budget

SCORE_S = {"cap": 1 / 1.4}
OTHER_SCORE_S, TRAIN_ROW_S, TRAINER_START_S, LOSS_ROW_S, EVAL_LOAD_S = 0.5, 0.7, 25.0, 0.5, 5.0
REFERENCE_BYTES, REFERENCE_CORES = 540e6, 2
TOKENS_PER_ROW = 120  # a GSM8K answer's tokens, for a token budget's rows before any row is counted


def scale(model_dir: Path) -> float:
    """How much slower than SmolLM2-135M on 2 cores this model on this machine is taken to be."""
    weights = sum(path.stat().st_size for path in model_dir.glob("*.safetensors")) or REFERENCE_BYTES
    return weights / REFERENCE_BYTES * REFERENCE_CORES / max(1, os.cpu_count() or 1)


def estimate(spec: PilotSpec, design: Design, model_dir: Path, steps: dict[str, int] | None = None) -> dict:
    """Seconds of scoring, training and evaluation the pilot takes from nothing done; `steps` per budget when
    known (else one epoch or min_steps over the budget's nominal rows)."""
    factor = scale(model_dir)
    candidates = design.subpool_rows * spec.replicates
    scoring = candidates * sum(SCORE_S.get(name, OTHER_SCORE_S) for name in spec.compared)
    args = resolve_recipe(spec.profile, {}, seed=0, template=None).args
    per_step = schedule(args, 1).rows_per_step
    models = {name: spec.random_draws if name not in spec.compared else 1 for name in spec.methods}
    training = starts = 0.0
    for budget in spec.budgets:
        rows = int(budget) // TOKENS_PER_ROW if spec.token_budget else parse_budget(budget).of(design.subpool_rows)
        budget_steps = (steps or {}).get(budget) or max(math.ceil(rows / per_step), spec.min_steps + 1)
        cells = sum(models.values()) * spec.replicates * spec.train_seeds
        training += cells * budget_steps * per_step * TRAIN_ROW_S
        starts += cells * TRAINER_START_S
    n_models = spec.replicates * (sum(models.values()) * len(spec.budgets) * spec.train_seeds + 1)
    parts = {"scoring_s": scoring * factor, "training_s": training * factor + starts,
             "evaluation_s": n_models * (design.n_heldout * LOSS_ROW_S * factor + EVAL_LOAD_S)}
    return {**{key: round(value, 1) for key, value in parts.items()}, "total_s": round(sum(parts.values()), 1)}
