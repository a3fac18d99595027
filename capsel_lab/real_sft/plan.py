"""What one pool of the real-model lab runs, where its files go, and the names its results use (no model here)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from capsel.ingest.records import FieldMap

POOL_RESULT, SELECTIONS_FILE, SCORED_MARK, RECIPE_FILE = "pool.json", "selections.json", "scored", "lab_recipe.yaml"
BASE, RANDOM, NULL = "base model", "random", "random (null)"
HELDOUT_FIELDS = FieldMap(instruction=("question",), response=("answer",))
# Over the cpu-small profile: a 10% selection of a 200-row pool is ~20 rows, which the profile's effective batch
# of 8 turns into 2 optimizer steps; 2 rows a step give every selection ten times its row count in steps.
LAB_RECIPE = {"gradient_accumulation_steps": 2}
# the paired deltas each pool reports: (method, against)
DELTAS = (("cap", RANDOM), ("cap", "ppl"), ("cap", "ifd"), ("cap, robust PPL guard z 3.5", RANDOM))


@dataclass(frozen=True)
class PoolPlan:
    """What one pool runs: its seed, the methods and what `capsel select` is asked for, the null's random draws."""

    model: str
    pool_seed: int
    n_pool: int
    n_heldout: int
    junk_share: float
    budget: str
    methods: dict[str, dict]
    train_seed: int = 0
    null_draws: int = 0         # random subsets besides the method's own (seeds 1..null_draws), fine-tuned too
    profile: str = "cpu-small"
    prompt_format: str = "auto"
    n_gsm8k: int = 0

    def asked(self) -> list[tuple[str, dict, int]]:
        """(name, select options, selection seed) of every selection: the methods, then the null's random draws."""
        asked = [(name, options, 0) for name, options in self.methods.items()]
        return asked + [(NULL, {"method": "random"}, seed) for seed in range(1, self.null_draws + 1)]


def pool_folder(out_dir: Path, pool_seed: int) -> Path:
    """Where a pool's files, store, selections and models live."""
    return out_dir / f"pool-{pool_seed}"


def finished_result(folder: Path, plan: PoolPlan) -> dict | None:
    """The pool's result (pool.json) when it holds every model `plan` asks for, else None: a rerun may ask for more
    than the run that wrote it (the null's draws, another method), and then runs what is missing, reusing the rest."""
    done = folder / POOL_RESULT
    if not done.is_file():
        return None
    result = json.loads(done.read_text(encoding="utf-8"))
    held = {(model["method"], model.get("selection_seed")) for model in result["models"]}
    return result if all((name, seed) in held for name, _, seed in plan.asked()) else None
