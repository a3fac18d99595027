"""Per-layer stable rank of a decoder's weight matrices and of its token hidden-state matrices."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn
from transformers import PreTrainedTokenizerBase

from capsel.cap_engine.prompt_format import RAW, prompt_token_ids
from capsel.errors import CapselError
from capsel.models.blocks import block_output, model_blocks
from capsel.profile.stable_rank import normalised_stable_rank


@dataclass(frozen=True)
class LayerRank:
    """One decoder block: mean normalised weight stable rank and normalised hidden-state stable rank."""

    layer: int                 # 1-based block index
    depth: float               # layer / n_layers
    weight_srank: float        # mean over the block's 2-D weights of srank / min(shape)
    hidden_srank: float        # srank of the (tokens x hidden) block output / min(tokens, hidden)
    n_weight_matrices: int
    n_tokens: int


@dataclass(frozen=True)
class RankProfile:
    """The survey of one model: a LayerRank per decoder block, first to last."""

    model: str
    layers: tuple[LayerRank, ...]

    def hidden(self) -> list[float]:
        """Hidden-state normalised stable rank per layer."""
        return [layer.hidden_srank for layer in self.layers]


def block_weight_ranks(block: nn.Module) -> dict[str, float]:
    """srank / min(shape) of every 2-D parameter in the block (attention and MLP projections)."""
    return {name: normalised_stable_rank(param) for name, param in block.named_parameters() if param.ndim == 2}


@torch.no_grad()
def hidden_states(
    model: nn.Module, tokenizer: PreTrainedTokenizerBase, texts: Sequence[str],
    max_tokens: int = 2048, max_length: int = 256, skip_first: bool = True, prompt_format: str = RAW,
) -> list[torch.Tensor]:
    """Per block, the (tokens x hidden) matrix of block outputs over `texts`, up to `max_tokens` rows.

    Texts run one at a time (no padding), tokenised as candidate prompts are in `prompt_format`
    and cut to their first `max_length` ids. With `skip_first`, each text's first position is left
    out: it is the BOS / attention-sink token, whose outsized norm would make the stable rank
    measure that one token instead of the text.
    """
    blocks = model_blocks(model)
    rows: list[list[torch.Tensor]] = [[] for _ in blocks]
    current: list[torch.Tensor | None] = [None] * len(blocks)

    def keep(index: int):
        def hook(_module, _inputs, output):
            current[index] = block_output(output)[0].detach().float().cpu()
        return hook

    handles = [block.register_forward_hook(keep(index)) for index, block in enumerate(blocks)]
    device = next(model.parameters()).device
    n_tokens = 0
    try:
        for text in texts:
            ids = torch.tensor([prompt_token_ids(tokenizer, [text], prompt_format)[0][:max_length]])
            model(input_ids=ids.to(device))
            start = 1 if skip_first else 0
            outputs = [states for states in current if states is not None]
            if len(outputs) != len(current):  # a missing block would shift every later block's index
                raise RuntimeError("a decoder block's hook did not fire on the sample text")
            take = min(outputs[0].shape[0] - start, max_tokens - n_tokens)
            if take <= 0:
                continue
            for index, states in enumerate(outputs):
                rows[index].append(states[start:start + take])
            n_tokens += take
            if n_tokens >= max_tokens:
                break
    finally:
        for handle in handles:
            handle.remove()
    if n_tokens < 2:
        raise CapselError("the sample texts gave fewer than 2 tokens; give longer texts")
    return [torch.cat(parts) for parts in rows]


def rank_profile(
    model: nn.Module, tokenizer: PreTrainedTokenizerBase, texts: Sequence[str],
    name: str = "", max_tokens: int = 2048, prompt_format: str = RAW,
    on_progress: Callable[[int, int], None] = lambda done, total: None,
) -> RankProfile:
    """The paper's rank survey of `model` over `texts` (weights and hidden states, per block); `on_progress(done,
    total)` hears each layer surveyed (0 once the texts have run through the model)."""
    model.eval()
    blocks = model_blocks(model)
    states = hidden_states(model, tokenizer, texts, max_tokens=max_tokens, prompt_format=prompt_format)
    on_progress(0, len(blocks))
    layers = []
    for index, (block, matrix) in enumerate(zip(blocks, states), start=1):
        weights = block_weight_ranks(block)
        layers.append(LayerRank(
            layer=index,
            depth=index / len(blocks),
            weight_srank=sum(weights.values()) / len(weights) if weights else float("nan"),
            hidden_srank=normalised_stable_rank(matrix),
            n_weight_matrices=len(weights),
            n_tokens=matrix.shape[0],
        ))
        on_progress(index, len(blocks))
    return RankProfile(model=name, layers=tuple(layers))
