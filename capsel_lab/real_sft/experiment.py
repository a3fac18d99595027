"""The real-model SFT comparison, replicated over pools: each pool a fresh draw of GSM8K train rows (its own seed,
not the trainer's), scored, selected by each method, fine-tuned with LlamaFactory and evaluated with the base
model through capsel's own stages; then each paired delta tested across pools, and CAP ranked among random subsets.

Every step is resumable (see pool_run.py); real_sft.json holds the whole result.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from capsel.config import Settings
from capsel.versioning import code_version
from capsel_lab.real_sft.pool_run import LAB_RECIPE, PoolPlan, pool_folder, run_pool
from capsel_lab.real_sft.replicates import across_pools, method_means, null_rank

SUMMARY_FILE, WALL_FILE = "real_sft.json", "wall_s.json"
# each method of the table: what `capsel select` is asked for
METHODS: dict[str, dict] = {
    "cap": {"method": "cap"},
    "cap, PPL guard 95th pct": {"method": "cap", "ppl_guard": 95.0},
    "cap, robust PPL guard z 3.5": {"method": "cap", "ppl_guard_z": 3.5},
    "random": {"method": "random"},
    "ppl": {"method": "ppl"},
    "ifd": {"method": "ifd"},
}
DEFAULT_METHODS = ("cap", "cap, robust PPL guard z 3.5", "random", "ppl", "ifd")
# a pool without junk has nothing for a PPL guard to hold back: its arm tests the ranking of clean rows alone
JUNK_FREE_METHODS = ("cap", "random", "ppl", "ifd")


@dataclass(frozen=True)
class RealSftSpec:
    """The pools, held-out rows, budget, training seed and profile of the real-model lab."""

    model: str
    pools: int = 6
    first_pool: int = 0          # pool seeds first_pool .. first_pool + pools - 1
    n_pool: int = 200
    n_heldout: int = 100
    junk_share: float = 0.05
    budget: str = "10%"
    train_seed: int = 0
    null_draws: int = 20         # more random subsets on the first pool, each fine-tuned: CAP's rank among them
    profile: str = "cpu-small"
    prompt_format: str = "auto"
    n_gsm8k: int = 0             # held-out questions also run through lm-eval's GSM8K (0: loss only)
    methods: tuple[str, ...] | None = None  # None: DEFAULT_METHODS, or JUNK_FREE_METHODS without junk
    late: str | None = None      # one more row: CAP with D_late re-averaged over these blocks (`select --late`)

    def method_options(self) -> dict[str, dict]:
        """Each method of this run's table and what `capsel select` is asked for."""
        names = self.methods or (DEFAULT_METHODS if self.junk_share > 0 else JUNK_FREE_METHODS)
        chosen = {name: METHODS[name] for name in names}
        return {**chosen, f"cap, late {self.late}": {"method": "cap", "late": self.late}} if self.late else chosen

    def pool_seeds(self) -> list[int]:
        """The seed of each pool's draw."""
        return list(range(self.first_pool, self.first_pool + self.pools))

    def pool_plan(self, pool_seed: int) -> PoolPlan:
        """What the pool with this seed runs (the null's draws on the first pool only)."""
        return PoolPlan(self.model, pool_seed, self.n_pool, self.n_heldout, self.junk_share, self.budget,
                        self.method_options(), self.train_seed,
                        self.null_draws if pool_seed == self.first_pool else 0, self.profile, self.prompt_format,
                        self.n_gsm8k)


@dataclass
class RealSftResult:
    """Every pool's result, the statistics across them, and the wall time of every run that worked on it."""

    summary: dict = field(default_factory=dict)
    path: Path | None = None


def run_real_sft(spec: RealSftSpec, out_dir: Path, settings: Settings,
                 say: Callable[[str], None] = print) -> RealSftResult:
    """Run (or resume) every pool, then test the deltas across pools; write real_sft.json."""
    started = time.monotonic()
    out_dir.mkdir(parents=True, exist_ok=True)
    pools = []
    for index, pool_seed in enumerate(spec.pool_seeds(), start=1):
        say(f"pool {pool_seed} ({index} of {spec.pools})")
        pools.append(run_pool(spec.pool_plan(pool_seed), pool_folder(out_dir, pool_seed), settings, say))
    walls = _add_wall_time(out_dir, time.monotonic() - started)
    summary = {
        "spec": asdict(spec), "recipe_overrides": LAB_RECIPE, "capsel_version": code_version(),
        "wall_s": sum(walls), "runs_wall_s": walls,
        "methods": method_means(pools), "comparisons": across_pools(pools),
        "null": null_rank(pools[0]) if spec.null_draws else None, "pools": pools,
    }
    path = out_dir / SUMMARY_FILE
    path.write_text(json.dumps(summary, indent=1, default=str) + "\n", encoding="utf-8")
    return RealSftResult(summary, path)


def _add_wall_time(out_dir: Path, seconds: float) -> list[float]:
    """Every run's seconds on this folder so far (a resumed lab adds up its parts)."""
    path = out_dir / WALL_FILE
    walls = json.loads(path.read_text()) if path.is_file() else []
    walls.append(round(seconds, 1))
    path.write_text(json.dumps(walls) + "\n", encoding="utf-8")
    return walls
