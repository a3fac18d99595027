"""KV caches that write into buffers sized once per batch, so a greedy step copies only its own token's states.

transformers' DynamicCache grows by concatenation: each greedy step copies the whole cache of every layer.
Here each layer allocates [rows, heads, capacity, dim] at the prompt's prefill and gives attention a view of
its filled part. The keys and values are the same numbers the dynamic cache holds, so the scores do not
change; cropping a branch off stays a slice of the view. forward.py uses it where it was measured faster
(CPU); benchmarks/README.md has the figures.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer


def preallocate(cache: Any, capacity: int) -> Any:
    """Swap the cache's plain and short sliding-window layers for buffered ones holding `capacity` positions.

    A sliding-window layer is swapped only while `capacity` stays under its window: past the window it drops
    its oldest states, which a buffer written from its start cannot follow, so such a layer stays dynamic.
    """
    layers = getattr(cache, "layers", None)
    if not layers:
        return cache
    for index, layer in enumerate(layers):
        kind = type(layer)
        if kind is DynamicLayer:
            layers[index] = _retyped(layer, BufferedLayer, capacity)
        elif kind is DynamicSlidingWindowLayer and capacity < layer.sliding_window:
            layers[index] = _retyped(layer, BufferedSlidingWindowLayer, capacity)
    return cache


def _retyped(layer: Any, kind: type[Any], capacity: int) -> Any:
    # Built from the layer's own state rather than its constructor, whose arguments change between releases.
    if layer.is_initialized:
        return layer
    buffered = object.__new__(kind)
    buffered.__dict__.update(layer.__dict__)
    buffered.capacity = capacity
    buffered.key_buffer = buffered.value_buffer = None
    return buffered


class _Buffered:
    """Writes new states after the filled part of a preallocated buffer; `keys`/`values` are views of it."""

    capacity: int
    key_buffer: torch.Tensor | None
    value_buffer: torch.Tensor | None
    keys: Any  # transformers declares them Optional; a buffered layer's are set once it holds a state
    values: Any

    # set by the transformers layer this one is mixed into (annotations only: its own methods stay in force)
    is_initialized: bool
    lazy_initialization: Any

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write the new states into the buffer and return the filled part, as transformers' layers return."""
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        self._count(key_states.shape[-2])
        self._append(key_states, value_states)
        return self.keys, self.values

    def _count(self, n_new: int) -> None:
        """Count positions the layer type tracks besides its states (none for a full-attention layer)."""

    def _append(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        filled = self.keys.shape[-2] if self.key_buffer is not None else 0
        needed = filled + key_states.shape[-2]
        if self.key_buffer is None or needed > self.key_buffer.shape[-2]:
            self._grow(key_states, value_states, filled, max(needed, self.capacity))
        assert self.key_buffer is not None and self.value_buffer is not None
        self.key_buffer[:, :, filled:needed].copy_(key_states)
        self.value_buffer[:, :, filled:needed].copy_(value_states)
        self.keys = self.key_buffer[:, :, :needed]
        self.values = self.value_buffer[:, :, :needed]

    def _grow(self, key_states: torch.Tensor, value_states: torch.Tensor, filled: int, size: int) -> None:
        # More than the batch was sized for (a caller's miscount): stay correct, at the cost of one copy.
        keys = key_states.new_empty((*key_states.shape[:2], size, key_states.shape[-1]))
        values = value_states.new_empty((*value_states.shape[:2], size, value_states.shape[-1]))
        if filled:
            keys[:, :, :filled].copy_(self.keys)
            values[:, :, :filled].copy_(self.values)
        self.key_buffer, self.value_buffer = keys, values


class BufferedLayer(_Buffered, DynamicLayer):
    """A full-attention layer of a preallocated cache."""


class BufferedSlidingWindowLayer(_Buffered, DynamicSlidingWindowLayer):
    """A sliding-window layer whose capacity stays under its window, so it never drops a state."""

    def _count(self, n_new: int) -> None:
        self.cumulative_length += n_new
        if self.cumulative_length >= self.sliding_window:
            raise RuntimeError(f"a buffered sliding-window layer reached its window ({self.sliding_window})")
