"""Length-sorted batches and padded id tensors: prompts padded on the left, responses on the right."""

from __future__ import annotations

from typing import Any, Callable, Sequence, TypeVar

import torch

T = TypeVar("T")


def length_sorted_batches(items: Sequence[T], batch_size: int, length: Callable[[T], Any]) -> list[list[T]]:
    """Items sorted by length (stable) and cut into batches, so a batch pads little."""
    if batch_size < 1:
        raise ValueError(f"batch size must be at least 1, got {batch_size}")
    ordered = sorted(items, key=length)
    return [ordered[start:start + batch_size] for start in range(0, len(ordered), batch_size)]


def left_padded(
    rows: Sequence[Sequence[int]], pad_id: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, mask) with each row's ids flush right, so every row's last prompt token is the last column."""
    width = max(len(row) for row in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for index, row in enumerate(rows):
        if row:
            ids[index, width - len(row):] = torch.tensor(row, dtype=torch.long)
            mask[index, width - len(row):] = 1
    return ids.to(device), mask.to(device)


def right_padded(
    rows: Sequence[Sequence[int]], pad_id: int, device: torch.device, width: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, mask) with each row's ids flush left, padded to `width` (default: the longest row)."""
    width = max((len(row) for row in rows), default=0) if width is None else width
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for index, row in enumerate(rows):
        if row:
            ids[index, : len(row)] = torch.tensor(row, dtype=torch.long)
            mask[index, : len(row)] = 1
    return ids.to(device), mask.to(device)
