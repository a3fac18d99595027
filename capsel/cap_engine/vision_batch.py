"""Several VLM prompts in one forward: their processor tensors joined, and the positions their model expects.

A processor's output for one prompt holds per-token tensors (`token_type_ids`, `mm_token_type_ids`: one value per
prompt id) and image tensors (pixels, grids: one or more rows per image, in the order the image tokens come).
Joined for a left-padded batch, the per-token ones are left-padded like the ids and the image ones are stacked
row after row, which is the order the model scatters image features into the flattened batch's image tokens.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Mapping, Sequence, TypeVar

import torch

from capsel.cap_engine.batching import length_sorted_batches

T = TypeVar("T")

# Families whose image tensors stack along their first axis in image order and whose positions capsel sets
# (tests/integration/test_multimodal_engine_matches_naive.py holds every one to its batch-of-one result).
# Molmo2's pooling indices point into its own prompt's patches, so its prompts run one at a time.
STACKING_FAMILIES = frozenset({"llava", "gemma3", "qwen2_vl"})


def prompts_per_batch(model: torch.nn.Module, batch_size: int) -> int:
    """How many of a VLM's prompts share a batch: `batch_size` where their tensors stack, else one."""
    return batch_size if getattr(model.config, "model_type", None) in STACKING_FAMILIES else 1


def joined_tensors(visions: Sequence[Mapping[str, Any]], width: int, device: torch.device) -> dict[str, Any]:
    """The batch's processor tensors: per-token ones left-padded with zeros to `width`, image ones stacked."""
    names = sorted({name for vision in visions for name in vision})
    joined: dict[str, Any] = {}
    for name in names:
        if _per_token(name):
            joined[name] = torch.stack([_left_pad(vision.get(name), width) for vision in visions]).to(device)
        else:
            parts = [vision[name] for vision in visions if name in vision]
            joined[name] = torch.cat(parts).to(device) if len(parts) > 1 else _moved(parts[0], device)
    return joined


def image_shape(vision: Mapping[str, Any] | None) -> tuple:
    """What must agree for two prompts' image tensors to stack: each image tensor's shape past its first axis."""
    return tuple(sorted((name, tuple(value.shape[1:])) for name, value in (vision or {}).items()
                        if isinstance(value, torch.Tensor) and not _per_token(name)))


def vision_batches(
    model: torch.nn.Module, items: Sequence[T], batch_size: int, vision: Callable[[T], Mapping[str, Any] | None],
    length: Callable[[T], Any],
) -> list[list[T]]:
    """A VLM's items in length-sorted batches of one image shape each, `prompts_per_batch` items at most."""
    size = prompts_per_batch(model, batch_size)
    return [batch for group in grouped(items, lambda item: image_shape(vision(item)))
            for batch in length_sorted_batches(group, size, length)]


def grouped(items: Sequence[T], key: Callable[[T], tuple]) -> list[list[T]]:
    """Items split by image shape (`key`), so each group's images stack; prompts without images join the largest."""
    groups: dict[tuple, list[T]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    plain = groups.pop((), [])
    if not groups:
        return [plain] if plain else []
    groups[max(groups, key=lambda shape: len(groups[shape]))].extend(plain)
    return list(groups.values())


def prompt_positions(
    model: torch.nn.Module, ids: torch.Tensor, mask: torch.Tensor, tensors: Mapping[str, Any]
) -> tuple[torch.Tensor, torch.Tensor]:
    """(the prompt's position ids, each row's next position): multimodal rotary ones where the model has them.

    Qwen2-VL gives image tokens 3-axis positions that advance by the image's grid, not its token count, so a
    row's response starts after its largest prompt position rather than at its length. The model's own
    bookkeeping of that offset (`rope_deltas`) assumes a batch it prefilled itself; capsel passes positions.
    """
    rope_index = getattr(getattr(model, "model", None), "get_rope_index", None)
    if rope_index is None or not tensors:  # text prompts, or a model with one-axis positions
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        return positions, mask.sum(-1)
    # what this transformers release's rope index takes (grids; token types since 5.x), never a silent 1-D guess
    accepted = inspect.signature(rope_index).parameters
    positions, _ = rope_index(ids, attention_mask=mask,
                              **{name: value for name, value in tensors.items() if name in accepted})
    # pads hold position 0, so the largest over the row's axes and tokens is its last real one
    return positions, positions.amax(dim=(0, 2)) + 1


def _per_token(name: str) -> bool:
    return name.endswith("token_type_ids")


def _left_pad(value: torch.Tensor | None, width: int) -> torch.Tensor:
    """One prompt's per-token row ([1, n]) flush right in `width` zeros (a prompt without it: all zeros)."""
    row = torch.zeros(width, dtype=torch.long if value is None else value.dtype)
    if value is not None:
        flat = value.reshape(-1)
        row[width - len(flat):] = flat
    return row


def _moved(value: Any, device: torch.device) -> Any:
    return value.to(device) if isinstance(value, torch.Tensor) else value
