"""The real-model lab's run: its pools, methods, budget, training seed and profile (read by the command line)."""

from __future__ import annotations

from dataclasses import dataclass

from capsel_lab.real_sft.plan import PoolPlan

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
