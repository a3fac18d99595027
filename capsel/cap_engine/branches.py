"""Both branches [x;y] and [x;y-hat] on one shared prompt prefill, with block outputs compared on the device.

The prompt is prefilled once. y-hat then runs on its cache, as one branch forward when it
is already known, or as the greedy decoding that produces it; hooks keep y-hat's block
outputs (response positions only). The cache is cropped back to the prompt and y runs as
one batched branch whose hooks reduce each block output to 1 - cos against y-hat's.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import torch

from capsel.cap_engine.batching import right_padded
from capsel.cap_engine.decoding import GreedyRows, decode_while
from capsel.cap_engine.divergence import BlockStates, DistancesTo, PairMeasure, token_nll
from capsel.cap_engine.forward import PromptState, extend, pad_id, prefill, rewind
from capsel.models.blocks import observe_blocks
from capsel.models.loading import LoadedModel


def compare_stored(
    loaded: LoadedModel,
    prompts: Sequence[Sequence[int]],
    responses: Sequence[Sequence[int]],
    generated: Sequence[Sequence[int]],
    visions: Sequence[Mapping[str, Any]] | None = None,
) -> PairMeasure:
    """Divergence and y's NLL when y-hat is already known: y-hat's aligned part runs as one branch.

    `visions`: a VLM's processor tensors for each prompt, encoded once in the shared prefill.
    """
    n_aligned = [min(len(y), len(g)) for y, g in zip(responses, generated)]
    state = prefill(loaded, prompts, visions, room=max(map(len, responses), default=0))
    first_logits = state.last_logits
    kept = BlockStates(len(loaded.blocks))
    ids, mask = right_padded([g[:n] for g, n in zip(generated, n_aligned)], pad_id(loaded), loaded.input_device)
    with observe_blocks(loaded.blocks, kept):
        extend(loaded, state, ids, mask, keep_last=1)
    return _against_reference(loaded, rewind(state), first_logits, responses, kept, n_aligned)


def generate_and_compare(
    loaded: LoadedModel, prompts: Sequence[Sequence[int]], responses: Sequence[Sequence[int]], horizon: int,
    visions: Sequence[Mapping[str, Any]] | None = None,
) -> tuple[list[list[int]], PairMeasure]:
    """Greedy y-hat and the divergence: y-hat's block outputs come out of its own decoding.

    One extra step feeds y-hat's last token when that position is still needed for alignment.
    `visions` as in compare_stored.
    """
    state = prefill(loaded, prompts, visions, room=max(horizon, *map(len, responses)))
    first_logits = state.last_logits
    rows = GreedyRows(len(prompts), horizon, loaded.info.eos_token_ids, first_logits.device, pad_id(loaded))
    rows.advance(first_logits)
    response_lengths = torch.tensor([len(y) for y in responses], device=first_logits.device)
    kept = BlockStates(len(loaded.blocks))
    with observe_blocks(loaded.blocks, kept):
        # Decode on while a row still generates or its last aligned y-hat token has not been fed yet.
        decode_while(loaded, state, rows,
                     lambda: (rows.running | (state.fed < torch.minimum(response_lengths, rows.lengths))).any(), kept)
    tokens = rows.tokens
    n_aligned = [min(len(y), len(g)) for y, g in zip(responses, tokens)]
    return tokens, _against_reference(loaded, rewind(state), first_logits, responses, kept, n_aligned)


def _against_reference(
    loaded: LoadedModel, state: PromptState, first_logits: torch.Tensor, responses: Sequence[Sequence[int]],
    kept: BlockStates, n_aligned: list[int],
) -> PairMeasure:
    """Run y on the prompt cache, comparing each block's output with y-hat's kept states; y's NLL too."""
    if not any(n_aligned):
        # Every y-hat is empty: nothing to compare, and every row is excluded.
        return PairMeasure(torch.zeros(len(loaded.blocks), len(responses), 0), n_aligned, [0.0] * len(responses))
    distances = DistancesTo(kept.collect())
    ids, mask = right_padded(responses, pad_id(loaded), loaded.input_device)
    with observe_blocks(loaded.blocks, distances):
        real_logits = extend(loaded, state, ids, mask)
    return PairMeasure(distances.collect(), n_aligned, _response_nll(first_logits, real_logits, responses))


def _response_nll(
    first_logits: torch.Tensor, real_logits: torch.Tensor, responses: Sequence[Sequence[int]]
) -> list[float]:
    """Sum of -log p(y_t) per row: y_1 from the prompt's last position, y_t+1 from y's position t."""
    first = token_nll(first_logits, torch.tensor([y[0] for y in responses]))
    # Row by row, so the float32 log-softmax spans one row's R x vocab logits, not the batch's.
    rests = [
        token_nll(real_logits[row, : len(y) - 1], torch.tensor(y[1:])).sum() if len(y) > 1 else first.new_zeros(())
        for row, y in enumerate(responses)
    ]
    # One copy to the host for the whole batch instead of a device sync per row.
    return (first + torch.stack(rests)).tolist()
