"""A batch's prompts prefilled in groups of similar length, their caches then joined into one left-padded cache.

One left-padded forward spends as much work on a short prompt as on the batch's longest: on the bundled real
pool a batch of 32 prompts of 39 to 256 tokens pads 8,192 positions for 3,300 real ones, and the prefill was
about half of the batch's time on CPU. Each group pads only to its own longest prompt. Every real position
gets the states a one-forward prefill gives it (to float rounding, as in any other batch composition: the
masked pads never reach a real position), and the greedy steps and branches still run the whole batch at once.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch
from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

from capsel.cap_engine.kv_buffers import BufferedLayer, BufferedSlidingWindowLayer

# What one more forward costs, in prompt positions' worth of work: on 2 CPU cores a Gemma 3 270M position
# costs about 1.6 ms and a forward's fixed cost (18 blocks of small operators) a few tens of ms.
GROUP_OVERHEAD = 64
# On a GPU a position costs little against a forward's fixed cost (an 8B model's forward is about a thousand
# kernel launches). Grouping at this overhead lost on one H100 (8B shape, batch 256: 79.5 cand/s against 94.4
# ungrouped, same call), so it stays opt-in there (LoadedModel.prefill_groups).
GPU_GROUP_OVERHEAD = 512

_FULL_LAYERS = (DynamicLayer, BufferedLayer)
_WINDOW_LAYERS = (DynamicSlidingWindowLayer, BufferedSlidingWindowLayer)


def length_groups(lengths: Sequence[int], overhead: int = GROUP_OVERHEAD) -> list[list[int]]:
    """Row indices in groups of consecutive lengths, with the fewest padded positions plus `overhead` per group.

    An exact split (dynamic programming over the sorted lengths); one group when splitting does not pay.
    """
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    best = [0] + [float("inf")] * len(order)
    start_of = [0] * (len(order) + 1)
    for end in range(1, len(order) + 1):
        widest = lengths[order[end - 1]]
        for start in range(end):
            cost = best[start] + (end - start) * widest + overhead
            if cost < best[end]:
                best[end], start_of[end] = cost, start
    groups: list[list[int]] = []
    end = len(order)
    while end:
        groups.append(order[start_of[end]:end])
        end = start_of[end]
    return groups[::-1]


def joinable(cache: Any, capacity: int) -> bool:
    """Whether group caches can be joined into `cache`: every layer keeps every state it is given.

    A sliding-window layer qualifies only while `capacity` stays under its window (within it the window's mask
    is the causal one); any other kind of layer (linear attention, offloaded, quantised) keeps the
    one-forward prefill.
    """
    layers = getattr(cache, "layers", None)
    if not layers:
        return False
    return all(type(layer) in _FULL_LAYERS or (type(layer) in _WINDOW_LAYERS and capacity < layer.sliding_window)
               for layer in layers)


def join_caches(cache: Any, parts: Sequence[tuple[Sequence[int], Any]], n_rows: int, width: int) -> None:
    """Write each group cache's states into `cache`, rows in place, every prompt flush right in `width`.

    `parts`: (row indices, the group's cache). Pad slots hold zeros; the mask hides them as it hides a
    one-forward prefill's pads. A group's layer is let go once written, so at most one joined layer is held
    besides the caches.
    """
    for index in range(len(cache.layers)):
        first = parts[0][1].layers[index]
        heads, dim = first.keys.shape[1], first.keys.shape[-1]
        keys = first.keys.new_zeros((n_rows, heads, width, dim))
        values = first.values.new_zeros((n_rows, heads, width, first.values.shape[-1]))
        for rows, own in parts:
            layer = own.layers[index]
            where = torch.as_tensor(list(rows), device=keys.device)
            keys[where, :, width - layer.keys.shape[-2]:] = layer.keys
            values[where, :, width - layer.values.shape[-2]:] = layer.values
            own.layers[index] = None
        cache.update(keys, values, index)
