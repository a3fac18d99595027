"""Finding a causal LM's decoder blocks without knowing its architecture."""

from __future__ import annotations

from torch import nn

from capsel.errors import CapselError


def decoder_blocks(model: nn.Module) -> nn.ModuleList:
    """The ModuleList holding the decoder blocks: the longest one whose length is the config's layer count."""
    n_layers = getattr(getattr(model, "config", None), "num_hidden_layers", None)
    lists = [module for module in model.modules() if isinstance(module, nn.ModuleList) and len(module) > 0]
    if n_layers is not None:
        lists = [module for module in lists if len(module) == n_layers]
    if not lists:
        raise CapselError(f"could not find the decoder blocks of {type(model).__name__}")
    return max(lists, key=len)


def block_output(output: object) -> object:
    """The hidden-state tensor of a block's forward output (blocks return a tensor or a tuple)."""
    return output[0] if isinstance(output, tuple) else output
