"""Stable rank ‖A‖_F² / ‖A‖_2², raw and normalised by the largest rank the shape allows."""

from __future__ import annotations

import torch


def stable_rank(matrix: torch.Tensor) -> float:
    """‖A‖_F² / ‖A‖_2² of a 2-D tensor (0.0 for an all-zero matrix)."""
    if matrix.ndim != 2:
        raise ValueError(f"stable rank needs a 2-D matrix, got shape {tuple(matrix.shape)}")
    values = torch.linalg.svdvals(matrix.detach().to(torch.float32))
    top = float(values[0]) if values.numel() else 0.0
    if top == 0.0:
        return 0.0
    return float((values.double() ** 2).sum()) / top**2


def normalised_stable_rank(matrix: torch.Tensor) -> float:
    """Stable rank divided by min(rows, columns), so 1.0 means all directions carry equal energy."""
    return stable_rank(matrix) / min(matrix.shape)
