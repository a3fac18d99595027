"""What one lab SFT run is: its pool, budgets, seeds and training recipe (read by the command line without a model)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class FinetuneConfig:
    """The training run every subset gets (only the data and the seed differ)."""

    # measured on the demo model (capsel_lab/README.md): lr 3e-4 or 1e-3, or more steps, only lower held-out
    # accuracy on subsets of ~30-100 examples (they are memorised and the model forgets); 60 steps fit 20 min
    steps: int = 60
    batch_size: int = 16
    lr: float = 1e-4
    warmup_steps: int = 6
    min_lr_ratio: float = 0.1
    weight_decay: float = 0.0



@dataclass(frozen=True)
class SftSpec:
    """The pool, the budgets (per domain, of the eligible scored candidates), seeds and the training run."""

    budgets: tuple[str, ...] = ("5%", "15%")
    n_seeds: int = 3
    n_clean: int = 600
    junk_share: float = 0.05
    pool_seed: int = 0
    finetune: FinetuneConfig = field(default_factory=FinetuneConfig)
    scoring_batch_size: int = 16
    eval_batch_size: int = 32
    max_heldout: int | None = None   # first N held-out questions only (a quick run); None: all of them
