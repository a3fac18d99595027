"""What one noise-rejection run is: its pool (kind, size, junk, seed), scoring and the selections it compares.

Kept apart from the experiment so the lab's command line reads its defaults without loading a model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

PoolKind = Literal["world", "real"]


@dataclass(frozen=True)
class NoiseSpec:
    """The pool (kind, size, junk share, seed), how it is scored, and the selections compared on it."""

    n_clean: int = 600           # world pool: split evenly over three domains, half known, half learnable facts
    junk_share: float = 0.05     # junk candidates per clean candidate, in every domain
    seed: int = 0
    batch_size: int = 16
    pool: PoolKind = "world"
    n_math: int = 300            # real pool: GSM8K train rows
    n_code: int = 164            # real pool: HumanEval rows (all of them)
    prompt_format: str = "auto"
    ppl_guard: float = 95.0      # the "CAP with guard" method: PPL percentile per domain
    budget: str = "10%"          # per-domain budget of the compared selections

    def records(self, model: str | Path) -> list[dict]:
        """The labelled pool records this spec describes."""
        from capsel_lab.real_pool import RealPoolSpec, real_pool_records
        from capsel_lab.real_sources import bundled_real_sources
        from capsel_lab.scored_pool import clean_pool_spec
        from capsel_lab.world.pools import build_pool

        if self.pool == "real":
            spec = RealPoolSpec(seed=self.seed, n_math=self.n_math, n_code=self.n_code, junk_share=self.junk_share)
            return real_pool_records(bundled_real_sources(), spec)
        from capsel_lab.pretrain_config import world_spec_of
        from capsel_lab.world.facts import build_world

        pool_spec = clean_pool_spec(self.n_clean, self.junk_share, self.seed)
        return build_pool(build_world(world_spec_of(model)), pool_spec).candidates
