"""KV caches that write into preallocated buffers, so a greedy step copies only its own token's states.

transformers' DynamicCache grows by concatenation: each greedy step copies the whole cache of every layer.
Here each layer holds [rows, heads, capacity, dim] from the prompt's prefill on. The keys and values are the
same numbers the dynamic cache holds, so the scores do not change; cropping a branch off stays a slice.

Two ways to hand the buffer to attention (`preallocate`'s `whole`):
- the filled part, a view (the default): attention reads what a dynamic cache would hold, bit for bit;
- the whole buffer, contiguous, its unfilled tail hidden by the causal mask (as transformers' StaticCache
  does): the tensors attention reads keep one shape and address for the whole batch, which CUDA kernels
  may need to read them without a copy and CUDA graphs need at all. The sums then run over more (masked)
  terms, so the logits agree to float rounding rather than bit for bit.

The memory comes from a `KVPool` kept per model: consecutive batches write into the same storage instead of
each allocating its own. forward.py uses the filled-part buffers on CPU, where they were measured faster; on
an H200 they lost to the growing cache, and the whole buffers with captured steps (graph_steps) beat it by
more than twice (benchmarks/README.md has the figures), so those are CUDA's default.
"""

from __future__ import annotations

import weakref
from typing import Any

import torch
from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

from capsel.cap_engine.per_model import Exclusive, PerModel


class KVPool(Exclusive):
    """Per-layer key and value storage that one live cache at a time writes into.

    The storage only grows (to the largest batch seen), so once the largest batch has run nothing more is
    allocated. A cache built while another still holds the lease gets buffers of its own: sharing storage
    between two live caches would let one overwrite the other's states.
    """

    def __init__(self) -> None:
        super().__init__()
        self._stored: dict[tuple[int, str], torch.Tensor] = {}

    def lease(self, cache: Any) -> KVPool | None:
        """This pool for `cache` until the cache is collected, or None while another cache holds it."""
        if not self.hold():
            return None
        weakref.finalize(cache, self.let_go)
        return self

    def take(self, key: tuple[int, str], like: torch.Tensor, size: int) -> torch.Tensor:
        """A contiguous [rows, heads, size, dim] tensor in stored memory, for `like`'s rows, heads, dim and dtype.

        Memory never written by a state holds zeros: a whole-buffer layer's attention multiplies its unfilled
        tail by a zero weight, which only a finite number survives.
        """
        rows, heads, _, dim = like.shape
        needed = rows * heads * size * dim
        stored = self._stored.pop(key, None)
        same_kind = stored is not None and (stored.dtype, stored.device) == (like.dtype, like.device)
        held = stored.numel() if stored is not None and same_kind else 0
        if stored is None or held < needed:
            # The old storage is let go before the larger one is allocated, so the two never coexist.
            del stored
            stored = like.new_zeros(max(needed, held))
        self._stored[key] = stored
        return stored[:needed].view(rows, heads, size, dim)


_POOLS = PerModel(KVPool)


def model_pool(model: Any) -> KVPool:
    """The pool of `model`'s caches; it lives as long as the model."""
    return _POOLS.of(model)


def preallocate(cache: Any, capacity: int, pool: KVPool | None = None, whole: bool = False) -> Any:
    """Swap the cache's plain and short sliding-window layers for buffered ones holding `capacity` positions.

    A sliding-window layer is swapped only while `capacity` stays under its window: past the window it drops
    its oldest states, which a buffer written from its start cannot follow, so such a layer stays dynamic.
    `pool`: where the buffers' memory comes from (None: each layer allocates its own). `whole`: attention gets
    the whole buffer, and a layer asked to hold more than `capacity` raises instead of growing.
    """
    layers = getattr(cache, "layers", None)
    if not layers:
        return cache
    for index, layer in enumerate(layers):
        kind = type(layer)
        if kind is DynamicLayer:
            layers[index] = _retyped(layer, BufferedLayer, capacity, pool, index, whole)
        elif kind is DynamicSlidingWindowLayer and capacity < layer.sliding_window:
            layers[index] = _retyped(layer, BufferedSlidingWindowLayer, capacity, pool, index, whole)
    return cache


def _retyped(layer: Any, kind: type[Any], capacity: int, pool: KVPool | None, index: int, whole: bool) -> Any:
    # Built from the layer's own state rather than its constructor, whose arguments change between releases.
    if layer.is_initialized:
        return layer
    buffered = object.__new__(kind)
    buffered.__dict__.update(layer.__dict__)
    buffered.capacity, buffered.whole = capacity, whole
    buffered.key_buffer = buffered.value_buffer = buffered.write_at = None
    buffered.pool, buffered.pool_index = pool, index
    return buffered


class _Buffered:
    """Writes new states after the filled part of a preallocated buffer; `keys`/`values` are views of that part."""

    capacity: int
    whole: bool
    key_buffer: torch.Tensor | None
    value_buffer: torch.Tensor | None
    pool: KVPool | None
    pool_index: int
    # Set while captured greedy steps run (graph_steps): the position, on the device, each new state is written at.
    write_at: torch.Tensor | None
    keys: Any  # transformers declares them Optional; a buffered layer's are set once it holds a state
    values: Any

    # set by the transformers layer this one is mixed into (annotations only: its own methods stay in force)
    is_initialized: bool
    lazy_initialization: Any

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write the new states into the buffer; return the filled part as transformers' layers do (or all of it)."""
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        if self.write_at is not None:
            # A graph replays this write at whatever position the tensor holds then; no host-side count moves.
            assert self.key_buffer is not None and self.value_buffer is not None
            self.key_buffer.index_copy_(2, self.write_at, key_states)
            self.value_buffer.index_copy_(2, self.write_at, value_states)
            return self.key_buffer, self.value_buffer
        self._count(key_states.shape[-2])
        self._append(key_states, value_states)
        if self.whole:
            assert self.key_buffer is not None and self.value_buffer is not None
            return self.key_buffer, self.value_buffer
        return self.keys, self.values

    def get_mask_sizes(self, *args: Any, **kwargs: Any) -> tuple[int, int]:
        """(kv_length, kv_offset) of the keys `update` returns, for transformers' mask (its arguments vary by
        release)."""
        if self.whole:
            return self.capacity, 0
        return super().get_mask_sizes(*args, **kwargs)  # type: ignore[misc]

    def settle(self, filled: int) -> None:
        """Stop writing at `write_at`; the first `filled` positions are the layer's states again."""
        assert self.key_buffer is not None and self.value_buffer is not None
        self.write_at = None
        self.keys = self.key_buffer[:, :, :filled]
        self.values = self.value_buffer[:, :, :filled]

    def _count(self, n_new: int) -> None:
        """Count positions the layer type tracks besides its states (none for a full-attention layer)."""

    def _append(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        filled = self.keys.shape[-2] if self.key_buffer is not None else 0
        needed = filled + key_states.shape[-2]
        if self.whole and needed > self.capacity:
            # The mask was already built for `capacity` keys; growing would hand attention more.
            raise RuntimeError(f"a whole-buffer KV layer sized for {self.capacity} positions was given {needed}")
        if self.key_buffer is None or needed > self.key_buffer.shape[-2]:
            self._grow(key_states, value_states, filled, max(needed, self.capacity))
        assert self.key_buffer is not None and self.value_buffer is not None
        self.key_buffer[:, :, filled:needed].copy_(key_states)
        self.value_buffer[:, :, filled:needed].copy_(value_states)
        self.keys = self.key_buffer[:, :, :needed]
        self.values = self.value_buffer[:, :, :needed]

    def _grow(self, key_states: torch.Tensor, value_states: torch.Tensor, filled: int, size: int) -> None:
        if not filled and self.pool is not None:
            self.key_buffer = self.pool.take((self.pool_index, "keys"), key_states, size)
            self.value_buffer = self.pool.take((self.pool_index, "values"), value_states, size)
            return
        # More than the batch was sized for (a caller's miscount): stay correct, at the cost of one copy.
        keys = key_states.new_zeros((*key_states.shape[:2], size, key_states.shape[-1]))
        values = value_states.new_zeros((*value_states.shape[:2], size, value_states.shape[-1]))
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
