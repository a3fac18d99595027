"""Locate a causal LM's decoder blocks and observe their outputs (h_l, before the final norm).

The scorer and the rank survey both find the blocks here, so they always measure the same modules.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

import torch
from torch import nn

from capsel.errors import CapselError


def find_decoder_blocks(model: nn.Module, n_layers: int) -> nn.ModuleList:
    """The ModuleList of n_layers identical blocks holding most parameters (model.layers, transformer.h, ...)."""
    candidates = [
        module
        for module in model.modules()
        if isinstance(module, nn.ModuleList)
        and len(module) == n_layers
        and len({type(block) for block in module}) == 1
    ]
    if not candidates:
        raise CapselError(
            f"cannot find the {n_layers} decoder blocks of {type(model).__name__}: "
            "no list of that many identical modules"
        )
    # Per-layer side lists (norms, adapters) have the same length; the blocks carry the weights.
    return max(candidates, key=lambda blocks: sum(p.numel() for p in blocks.parameters()))


def model_blocks(model: Any) -> nn.ModuleList:
    """The decoder blocks of a loaded causal LM, by the same rule the scorer uses (the config's layer count)."""
    return find_decoder_blocks(model, int(model.config.get_text_config().num_hidden_layers))


def block_output(output: object) -> torch.Tensor:
    """The hidden state a block returns: the tensor itself or the first element of its tuple."""
    if isinstance(output, torch.Tensor):
        return output
    if isinstance(output, (tuple, list)) and output and isinstance(output[0], torch.Tensor):
        return output[0]
    raise CapselError(f"decoder block returned {type(output).__name__}; expected a tensor or a tuple")


@contextmanager
def observe_blocks(blocks: nn.ModuleList, sink: Callable[[int, torch.Tensor], None]) -> Iterator[None]:
    """Call sink(layer_index, h) with each block's output (0-based index) while the block is active."""
    handles = [
        block.register_forward_hook(lambda _module, _args, output, index=index: sink(index, block_output(output)))
        for index, block in enumerate(blocks)
    ]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
