"""Both branches [x;y] and [x;y-hat] on one shared prompt prefill, with the block outputs compared on the fly.

After the prompt is prefilled once, its cache is duplicated row-wise: row 2i carries the
reference response y and row 2i+1 the generated response y-hat, so a block's output holds
both branches side by side and the hook reduces them to 1 - cos at once.
"""

from __future__ import annotations

from typing import Sequence

import torch

from capsel.scoring.batching import right_padded
from capsel.scoring.blocks import observe_blocks
from capsel.scoring.decoding import GreedyRows, step_tensors
from capsel.scoring.divergence import PairDistances, PairMeasure, token_nll
from capsel.scoring.forward import extend, paired, pad_id, prefill
from capsel.scoring.model_loading import LoadedModel


def compare_stored(
    loaded: LoadedModel,
    prompts: Sequence[Sequence[int]],
    responses: Sequence[Sequence[int]],
    generated: Sequence[Sequence[int]],
) -> PairMeasure:
    """Divergence and y's NLL when y-hat is already known: prefill once, then one forward of both branches."""
    n_aligned = [min(len(y), len(g)) for y, g in zip(responses, generated)]
    state = prefill(loaded, prompts)
    first_nll = token_nll(state.last_logits, torch.tensor([y[0] for y in responses]))
    both = paired(state)
    branches = [rows for y, g, n in zip(responses, generated, n_aligned) for rows in (y, g[:n])]
    ids, mask = right_padded(branches, pad_id(loaded), loaded.input_device)
    distances = PairDistances(len(loaded.blocks))
    with observe_blocks(loaded.blocks, distances):
        logits = extend(loaded, both, ids, mask)
    # Position t of the y row predicts y[t+1]; its first token was predicted by the prompt's last position.
    real_logits = logits[0::2]
    nll = []
    for row, y in enumerate(responses):
        rest = token_nll(real_logits[row, : len(y) - 1], torch.tensor(y[1:])).sum() if len(y) > 1 else 0.0
        nll.append(float(first_nll[row] + rest))
    return PairMeasure(distances.collect(), n_aligned, nll)


def generate_and_compare(
    loaded: LoadedModel, prompts: Sequence[Sequence[int]], responses: Sequence[Sequence[int]], horizon: int
) -> tuple[list[list[int]], PairMeasure]:
    """Greedy y-hat and the divergence in one lockstep decode: y is teacher-forced beside y-hat, step by step.

    y-hat's block outputs come out of its own generation; one extra step feeds its last
    token when that position is still needed for alignment.
    """
    state = prefill(loaded, prompts)
    rows = GreedyRows(len(prompts), horizon, loaded.info.eos_token_ids)
    rows.advance(state.last_logits)
    nll = token_nll(state.last_logits, torch.tensor([y[0] for y in responses])).tolist()
    both = paired(state)
    distances = PairDistances(len(loaded.blocks))
    pad = pad_id(loaded)
    with observe_blocks(loaded.blocks, distances):
        while _needs_step(rows, responses, both.fed):
            position = both.fed
            real = [y[position] if position < len(y) else None for y in responses]
            gen = rows.token_at(position)
            ids, mask = step_tensors([token for pair in zip(real, gen) for token in pair], pad, loaded.input_device)
            logits = extend(loaded, both, ids, mask, keep_last=1)[:, -1]
            rows.advance(logits[1::2])
            _add_next_nll(nll, logits[0::2], responses, both.fed)
    n_aligned = [min(len(y), len(g)) for y, g in zip(responses, rows.tokens)]
    return rows.tokens, PairMeasure(distances.collect(), n_aligned, nll)


def _needs_step(rows: GreedyRows, responses: Sequence[Sequence[int]], fed: int) -> bool:
    """Another step is needed while a row still generates, lacks aligned states, or lacks y's logits."""
    for y, tokens, finished in zip(responses, rows.tokens, rows.finished):
        if not finished:
            return True
        if tokens and (fed < min(len(y), len(tokens)) or fed < len(y) - 1):
            return True
    return False


def _add_next_nll(nll: list[float], logits: torch.Tensor, responses: Sequence[Sequence[int]], fed: int) -> None:
    """Add -log p(y[fed]) for rows whose y is that long; the logits were produced after feeding fed tokens."""
    rows = [row for row, y in enumerate(responses) if fed < len(y)]
    if not rows:
        return
    targets = torch.tensor([responses[row][fed] for row in rows])
    values = token_nll(logits[rows], targets).tolist()
    for row, value in zip(rows, values):
        nll[row] += value
