"""The divergence arithmetic: 1 - cos per layer and position, D_l, D_early, D_late and the response PPL."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F

from capsel.cap_engine.results import DivergenceResult


class BlockStates:
    """Block-output sink that keeps every layer's outputs, concatenated along positions (y-hat during decoding).

    Captured greedy steps (graph_steps) keep them in slots instead: one [rows, width, hidden] tensor per layer,
    each step's output copied in at the position `slot` holds on the device, as a replayed graph can only write
    into memory it captured.
    """

    def __init__(self, n_layers: int):
        self.parts: list[list[torch.Tensor]] = [[] for _ in range(n_layers)]
        self.slots: list[torch.Tensor] | None = None
        self.slot: torch.Tensor | None = None
        self.n_slotted = 0

    def use_slots(self, slots: list[torch.Tensor], slot: torch.Tensor) -> None:
        """Keep the next outputs, one position each, in `slots` (per layer [rows, width, hidden]) at the position
        `slot` (a one-element device tensor) holds."""
        if any(self.parts):
            raise RuntimeError("block states were kept before their slots were set up")
        self.slots, self.slot = list(slots), slot

    def __call__(self, layer: int, hidden: torch.Tensor) -> None:
        if self.slots is None:
            self.parts[layer].append(hidden)
        else:
            self.slots[layer].index_copy_(1, self.slot, hidden)  # type: ignore[arg-type]

    def collect(self) -> list[torch.Tensor]:
        """Per layer [rows, positions, hidden], positions in the order they were fed."""
        if self.slots is None:
            return [torch.cat(part, dim=1) for part in self.parts]
        return [slots[:, : self.n_slotted] for slots in self.slots]


class DistancesTo:
    """Block-output sink: 1 - cos between each block's output and the same layer's kept states, on the device."""

    def __init__(self, reference: list[torch.Tensor]):
        self.reference = reference
        self.parts: list[torch.Tensor | None] = [None] * len(reference)

    def __call__(self, layer: int, hidden: torch.Tensor) -> None:
        other = self.reference[layer]
        width = min(hidden.shape[1], other.shape[1])
        # Upcast so bf16 models get a float32 cosine.
        self.parts[layer] = 1.0 - F.cosine_similarity(hidden[:, :width].float(), other[:, :width].float(), dim=-1)

    def collect(self) -> torch.Tensor:
        """[layers, rows, positions] on the CPU: per-position scalars, copied off the device in one transfer."""
        parts = [part for part in self.parts if part is not None]
        if len(parts) != len(self.parts):  # a missing layer would shift every later layer's index
            raise RuntimeError("a decoder block's hook did not fire: its distances are missing")
        return torch.stack(parts).cpu()


@dataclass
class PairMeasure:
    """Raw per-batch measurements before summarising: distances, aligned counts and response NLL."""

    distances: torch.Tensor
    n_aligned: list[int]
    response_nll: list[float]


def token_nll(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Negative log-probability of each target id under its logits row, in float32."""
    return F.cross_entropy(logits.float(), targets.to(logits.device), reduction="none")


def layer_divergence(distances: torch.Tensor, n_aligned: Sequence[int]) -> torch.Tensor:
    """D_l per row: mean over each row's first n aligned positions (rows with n=0 give 0). Shape [rows, layers]."""
    counts = torch.tensor(n_aligned, dtype=torch.float64)
    positions = torch.arange(distances.shape[-1])
    mask = (positions[None, :] < counts[:, None]).to(torch.float64)
    sums = (distances.to(torch.float64) * mask[None]).sum(-1)
    return (sums / counts.clamp(min=1)[None, :]).T


def summarize(
    candidate_ids: Sequence[str],
    measure: PairMeasure,
    response_lengths: Sequence[int],
    early_layers: Sequence[int],
    late_layers: Sequence[int],
) -> list[DivergenceResult]:
    """One DivergenceResult per row: the D_l vector, its early/late means and exp(mean NLL) of y."""
    profiles = layer_divergence(measure.distances, measure.n_aligned)
    results = []
    for row, candidate_id in enumerate(candidate_ids):
        profile = profiles[row]
        results.append(DivergenceResult(
            candidate_id=candidate_id,
            n_aligned=measure.n_aligned[row],
            layer_divergence=profile.tolist(),
            d_early=float(profile[[layer - 1 for layer in early_layers]].mean()),
            d_late=float(profile[[layer - 1 for layer in late_layers]].mean()),
            ppl=math.exp(measure.response_nll[row] / response_lengths[row]),
            excluded_reason=None,
        ))
    return results
