"""Cached forward passes: prefill a left-padded prompt batch once, then extend it with response tokens."""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import torch

from capsel.cap_engine.batching import left_padded
from capsel.cap_engine.compiled_norms import compile_norms_and_mlps, compiles
from capsel.cap_engine.greedy_head import returned
from capsel.cap_engine.prefill_groups import GPU_GROUP_OVERHEAD, GROUP_OVERHEAD, join_caches, joinable, length_groups
from capsel.cap_engine.sliced_head import sliced_head
from capsel.cap_engine.vision_batch import joined_tensors, prompt_positions
from capsel.models.loading import KV_LAYOUTS, LoadedModel


@dataclass
class PromptState:
    """A batch's KV cache after the prompt (plus whatever was fed since), its mask and last-prompt logits."""

    cache: Any  # a transformers DynamicCache
    mask: torch.Tensor
    # Each row's position for its first response token: its prompt length, or past a VLM's multimodal positions.
    next_positions: torch.Tensor
    last_logits: torch.Tensor
    fed: int = 0


def pad_id(loaded: LoadedModel) -> int:
    """Any valid id for padded slots; they are masked out, so only validity matters."""
    tokenizer = loaded.info.tokenizer
    if tokenizer.pad_token_id is not None:
        return int(tokenizer.pad_token_id)
    return min(loaded.info.eos_token_ids, default=0)


def prefill(
    loaded: LoadedModel, prompts: Sequence[Sequence[int]], visions: Sequence[Mapping[str, Any]] | None = None,
    room: int = 0,
) -> PromptState:
    """Run the prompts once; logits only at the last prompt position (it predicts the first response token).

    `visions` (a VLM's processor tensors for each prompt: pixel values, grids, token types) run the vision
    encoder here, once; the cache then holds the image and text prefix for every branch. `room`: the most
    positions any one branch will feed after the prompt; the cache is allocated for the prompt plus that.
    """
    ids, mask = left_padded(prompts, pad_id(loaded), loaded.input_device)
    tensors = {} if visions is None else joined_tensors(visions, ids.shape[1], loaded.input_device)
    # Left pads get position 0, as HF generate clamps them; they are masked out.
    positions, next_positions = prompt_positions(loaded.model, ids, mask, tensors)
    cache = _cache(loaded, ids.shape[1] + room)
    groups = _length_groups(loaded, prompts, cache, ids.shape[1] + room) if visions is None else []
    if len(groups) > 1:
        return PromptState(cache, mask, next_positions, _grouped_prefill(loaded, prompts, groups, cache))
    logits = _forward(loaded, ids, mask, positions, cache, keep_last=1, **tensors)
    return PromptState(cache, mask, next_positions, logits[:, -1])


def _length_groups(
    loaded: LoadedModel, prompts: Sequence[Sequence[int]], cache: Any, capacity: int
) -> list[list[int]]:
    on_cpu = loaded.input_device.type == "cpu"
    # Grouping pays on CPU; on an H100 it lost (benchmarks/README.md), so there it runs only when asked for.
    wanted = on_cpu if loaded.prefill_groups is None else loaded.prefill_groups
    if not wanted or not joinable(cache, capacity):
        return []
    return length_groups([len(prompt) for prompt in prompts], GROUP_OVERHEAD if on_cpu else GPU_GROUP_OVERHEAD)


def _grouped_prefill(
    loaded: LoadedModel, prompts: Sequence[Sequence[int]], groups: Sequence[Sequence[int]], cache: Any
) -> torch.Tensor:
    """Each group's own left-padded forward, the caches joined into `cache`; each row's last-prompt logits."""
    parts, logits = [], []
    for rows in groups:
        ids, mask = left_padded([prompts[row] for row in rows], pad_id(loaded), loaded.input_device)
        positions, _ = prompt_positions(loaded.model, ids, mask, {})
        own = new_cache(loaded, ids.shape[1], "dynamic")
        logits.append(_forward(loaded, ids, mask, positions, own, keep_last=1)[:, -1])
        parts.append((rows, own))
    join_caches(cache, parts, len(prompts), max(map(len, prompts)))
    order = torch.as_tensor([row for rows in groups for row in rows], device=logits[0].device)
    return torch.cat(logits)[torch.argsort(order)]


def _cache(loaded: LoadedModel, capacity: int) -> Any:
    return new_cache(loaded, capacity, kv_layout(loaded))


def kv_layout(loaded: LoadedModel) -> str:
    """The KV cache the engine builds for `loaded`: its `kv_layout`, or by device when that is "auto"."""
    if loaded.kv_layout not in KV_LAYOUTS:
        raise ValueError(f"unknown KV layout {loaded.kv_layout!r} (expected one of {', '.join(KV_LAYOUTS)})")
    if loaded.kv_layout != "auto":
        return loaded.kv_layout
    if loaded.input_device.type == "cpu":
        # The filled-part buffers: on CPU they beat transformers' growing cache and ran level with the whole
        # buffers (benchmarks/README.md).
        return "buffered"
    # Measured on an H200 (8B shape, bf16, batch 256, 2,048 candidates): the growing cache 38.6 and 45.7 cand/s,
    # the whole buffers 62.3, captured steps 95.8 and 100.1; Llava-1.5-7B shape 7.3 against 16.6. On an H100,
    # captured steps 94.4 against 54.0 for the growing cache's engine before the pooled buffers, in one call
    # (benchmarks/README.md). A capture needs SDPA, which takes graph_steps' boolean mask, and one device: a graph
    # replays on the device it was captured on, and a model spread over several GPUs would leave it.
    attention = getattr(loaded.model.config, "_attn_implementation", None)
    if attention == "sdpa" and len(set(getattr(loaded.model, "hf_device_map", {}).values())) <= 1:
        return "graphed"
    return "dynamic"


# The granularity of a graphed batch's KV capacity (new_cache).
CAPACITY_STEP = 16


def new_cache(loaded: LoadedModel, capacity: int, layout: str) -> Any:
    """An empty KV cache for a batch that will hold `capacity` positions.

    `layout`: "dynamic" (transformers' cache, growing by concatenation), "buffered" (layers write into the
    model's pooled buffers, attention reads the filled part) or "whole"/"graphed" (the same buffers, attention
    reads all `capacity` positions; see kv_buffers and graph_steps).
    """
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    from capsel.cap_engine.kv_buffers import model_pool, preallocate

    cache = DynamicCache(config=loaded.model.config)
    # Sliding-window (and linear-attention) layers drop old states unless told to keep them for a crop.
    cache.activate_past_recording()
    if layout == "dynamic":
        return cache
    if layout == "graphed" and all(type(layer) is DynamicLayer for layer in cache.layers):
        # A captured step is kept for the next batch of the same capacity (graph_steps): rounding it up lets
        # batches of nearly equal width share one, for a few more masked keys per step.
        capacity = -(-capacity // CAPACITY_STEP) * CAPACITY_STEP
    return preallocate(cache, capacity, model_pool(loaded.model).lease(cache), whole=layout in ("whole", "graphed"))


def extend(
    loaded: LoadedModel, state: PromptState, ids: torch.Tensor, mask: torch.Tensor, keep_last: int = 0
) -> torch.Tensor:
    """Feed the next response tokens of every row (pads masked) on top of the cache; returns logits.

    keep_last=0 returns logits at every fed position, k>0 only at the last k.
    """
    width = ids.shape[1]
    positions = state.next_positions[:, None] + state.fed + torch.arange(width, device=ids.device)[None, :]
    state.mask = torch.cat([state.mask, mask.to(state.mask.device)], dim=1)
    logits = _forward(loaded, ids, state.mask, positions, state.cache, keep_last)
    state.fed += width
    return logits


def rewind(state: PromptState) -> PromptState:
    """Crop everything fed after the prompt off the cache, so another branch can start from the prompt."""
    if state.fed:
        state.cache.crop(-state.fed)
        state.mask = state.mask[:, : state.mask.shape[1] - state.fed]
        state.fed = 0
    return state


def _forward(loaded, ids, mask, positions, cache, keep_last: int, **tensors: Any) -> torch.Tensor:
    return call_model(loaded, keep_last, cache=cache, input_ids=ids, attention_mask=mask, position_ids=positions,
                      **tensors)


def call_model(loaded: LoadedModel, keep_last: int, cache: Any, **inputs: Any) -> torch.Tensor:
    """The model's logits for `inputs` on `cache`: at every position (keep_last=0) or the last keep_last."""
    if compiles(loaded):
        compile_norms_and_mlps(loaded.model)
    kwargs = {"logits_to_keep": keep_last} if loaded.supports_logits_to_keep else {}
    inputs[cache_keyword(type(loaded.model).forward)] = cache
    with sliced_head(loaded):
        logits = loaded.model(**inputs, use_cache=True, **kwargs).logits
    returned(loaded, logits)
    return logits[:, -keep_last:] if keep_last and not loaded.supports_logits_to_keep else logits


@functools.lru_cache(maxsize=None)
def cache_keyword(forward: Any) -> str:
    """The name a model's `forward` takes its KV cache under."""
    # transformers 5.x names it `cache` and warns on every call under the old name (a FutureWarning per
    # batch in the user's terminal); the 4.x releases capsel also supports know only `past_key_values`
    return "cache" if "cache" in inspect.signature(forward).parameters else "past_key_values"
