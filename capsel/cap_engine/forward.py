"""Cached forward passes: prefill a left-padded prompt batch once, then extend it with response tokens."""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import torch

from capsel.cap_engine.batching import left_padded
from capsel.models.loading import LoadedModel


@dataclass
class PromptState:
    """A batch's KV cache after the prompt (plus whatever was fed since), its mask and last-prompt logits."""

    cache: Any  # a transformers DynamicCache
    mask: torch.Tensor
    prompt_lengths: torch.Tensor
    last_logits: torch.Tensor
    fed: int = 0
    # A VLM row (batch of one, unpadded): the model derives positions itself (multimodal rotary ones included).
    model_positions: bool = False


def pad_id(loaded: LoadedModel) -> int:
    """Any valid id for padded slots; they are masked out, so only validity matters."""
    tokenizer = loaded.info.tokenizer
    if tokenizer.pad_token_id is not None:
        return int(tokenizer.pad_token_id)
    return min(loaded.info.eos_token_ids, default=0)


def prefill(
    loaded: LoadedModel, prompts: Sequence[Sequence[int]], vision: Mapping[str, Any] | None = None, room: int = 0
) -> PromptState:
    """Run the prompts once; logits only at the last prompt position (it predicts the first response token).

    `vision` (a VLM's processor tensors for one prompt: pixel values, grids, token types) runs the vision
    encoder here, once; the cache then holds the image and text prefix for every branch. `room`: the most
    positions any one branch will feed after the prompt; the cache is allocated for the prompt plus that.
    """
    if vision is not None:
        return _prefill_multimodal(loaded, prompts, vision, room)
    ids, mask = left_padded(prompts, pad_id(loaded), loaded.input_device)
    # Left pads would get position -1; HF generate clamps them to 0 the same way.
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    cache = _cache(loaded, ids.shape[1] + room)
    logits = _forward(loaded, ids, mask, positions, cache, keep_last=1)
    return PromptState(cache, mask, mask.sum(-1), logits[:, -1])


def _cache(loaded: LoadedModel, capacity: int) -> Any:
    from transformers import DynamicCache

    from capsel.cap_engine.kv_buffers import preallocate

    cache = DynamicCache(config=loaded.model.config)
    # Sliding-window (and linear-attention) layers drop old states unless told to keep them for a crop.
    cache.activate_past_recording()
    # Measured: on CPU the buffers score Gemma 3 270M 6% faster; on an H200 (8B shape, batch 256) a fresh set of
    # per-layer buffers each batch ran 10% slower end to end than the growing cache (benchmarks/README.md).
    return preallocate(cache, capacity) if loaded.input_device.type == "cpu" else cache


def _prefill_multimodal(
    loaded: LoadedModel, prompts: Sequence[Sequence[int]], vision: Mapping[str, Any], room: int
) -> PromptState:
    if len(prompts) != 1:
        raise ValueError(f"a multimodal prompt is prefilled alone, got a batch of {len(prompts)}")
    ids = torch.tensor([list(prompts[0])], dtype=torch.long, device=loaded.input_device)
    _forget_rope_deltas(loaded.model)
    cache = _cache(loaded, ids.shape[1] + room)
    tensors = {name: value.to(loaded.input_device) if isinstance(value, torch.Tensor) else value
               for name, value in vision.items()}
    logits = _call(loaded, keep_last=1, cache=cache, input_ids=ids, **tensors)
    mask = torch.ones_like(ids)
    return PromptState(cache, mask, mask.sum(-1), logits[:, -1], model_positions=True)


def _forget_rope_deltas(model: torch.nn.Module) -> None:
    """Drop multimodal-rotary offsets a previous prompt left on the model (Qwen2-VL keeps them between calls)."""
    for module in model.modules():
        if getattr(module, "rope_deltas", None) is not None:
            setattr(module, "rope_deltas", None)


def extend(
    loaded: LoadedModel, state: PromptState, ids: torch.Tensor, mask: torch.Tensor, keep_last: int = 0
) -> torch.Tensor:
    """Feed the next response tokens of every row (pads masked) on top of the cache; returns logits.

    keep_last=0 returns logits at every fed position, k>0 only at the last k.
    """
    width = ids.shape[1]
    if state.model_positions:
        if not bool(mask.all()):
            raise ValueError("a multimodal row is fed unpadded")
        # No mask, no positions: the model counts the cache (and adds its rotary offsets) itself.
        logits = _call(loaded, keep_last, cache=state.cache, input_ids=ids)
        state.mask = torch.cat([state.mask, mask.to(state.mask.device)], dim=1)
        state.fed += width
        return logits
    positions = state.prompt_lengths[:, None] + state.fed + torch.arange(width, device=ids.device)[None, :]
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


def _forward(loaded, ids, mask, positions, cache, keep_last: int) -> torch.Tensor:
    return _call(loaded, keep_last, cache=cache, input_ids=ids, attention_mask=mask, position_ids=positions)


def _call(loaded: LoadedModel, keep_last: int, cache: Any, **inputs: Any) -> torch.Tensor:
    kwargs = {"logits_to_keep": keep_last} if loaded.supports_logits_to_keep else {}
    inputs[cache_keyword(type(loaded.model).forward)] = cache
    logits = loaded.model(**inputs, use_cache=True, **kwargs).logits
    return logits[:, -keep_last:] if keep_last and not loaded.supports_logits_to_keep else logits


@functools.lru_cache(maxsize=None)
def cache_keyword(forward: Any) -> str:
    """The name a model's `forward` takes its KV cache under."""
    # transformers 5.x names it `cache` and warns on every call under the old name (a FutureWarning per
    # batch in the user's terminal); the 4.x releases capsel also supports know only `past_key_values`
    return "cache" if "cache" in inspect.signature(forward).parameters else "past_key_values"
