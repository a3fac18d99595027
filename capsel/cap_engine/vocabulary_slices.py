"""The output head's product in slices of the vocabulary: each slice of the head's rows times the rows' transpose.

Each logit is still one dot product over the hidden size; the slices only change which logits one call of MKL
computes. A slice's product depends on nothing but that slice, the rows and the threads, so one slice computed on
its own has the bits it has inside the whole (cap_engine.sliced_head checks the whole against the plain head).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from capsel.models.loading import LoadedModel

# Vocabulary rows per slice: a slice's logits for a batch of 32 (512 KB) stay in the core's cache.
SLICE_ROWS = 2048


def slices_head(loaded: LoadedModel) -> bool:
    """Whether `loaded`'s head runs in slices where they agree: never unless it is a linear head without bias on CPU;
    then `loaded.sliced_head`, or when that is None, for a float32 head whose vocabulary spans more than one slice
    (the shapes measured)."""
    head = loaded.model.get_output_embeddings()
    if type(head) is not torch.nn.Linear or head.bias is not None or head.weight.device.type != "cpu":
        return False
    if loaded.sliced_head is not None:
        return loaded.sliced_head
    return head.weight.dtype == torch.float32 and head.weight.shape[0] > SLICE_ROWS


def columns_of(rows: torch.Tensor) -> torch.Tensor:
    """The rows' transpose as the slices multiply it: [hidden, rows], contiguous."""
    return rows.T.contiguous()


def slice_logits(weight: torch.Tensor, columns: torch.Tensor, start: int) -> torch.Tensor:
    """The logits of vocabulary rows start .. start + SLICE_ROWS, [rows, slice]."""
    return torch.mm(weight[start:start + SLICE_ROWS], columns).T


def in_slices(rows: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """rows @ weight.T, computed as each slice of `weight`'s rows times the rows' transpose."""
    columns = columns_of(rows)
    logits = rows.new_empty(rows.shape[0], weight.shape[0])
    for start in range(0, weight.shape[0], SLICE_ROWS):
        logits[:, start:start + SLICE_ROWS] = slice_logits(weight, columns, start)
    return logits
