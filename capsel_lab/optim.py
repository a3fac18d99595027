"""The lab's optimizer and schedule, shared by pretraining and SFT: AdamW, linear warm-up, cosine decay."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch


def adamw(model: torch.nn.Module, lr: float, weight_decay: float) -> torch.optim.AdamW:
    """AdamW (betas 0.9/0.95) with weight decay on matrices only, not on norms and biases."""
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=lr, betas=(0.9, 0.95),
    )


def warmup_cosine(steps: int, warmup_steps: int, min_lr_ratio: float) -> Callable[[int], float]:
    """LR factor per step: linear warm-up to 1 over `warmup_steps`, then cosine decay to `min_lr_ratio`."""
    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = (step - warmup_steps) / max(1, steps - warmup_steps)
        return min_lr_ratio + (1 - min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))
    return factor


def scheduled_adamw(model: torch.nn.Module, lr: float, weight_decay: float, steps: int, warmup_steps: int,
                    min_lr_ratio: float) -> tuple[torch.optim.AdamW, torch.optim.lr_scheduler.LambdaLR]:
    """The optimizer and its per-step schedule."""
    optimizer = adamw(model, lr, weight_decay)
    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine(steps, warmup_steps, min_lr_ratio))
