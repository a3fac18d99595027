"""Per-token loss of response tokens after a prefix, prefix tokens masked out: IFD's (and LESS's) loss."""

from __future__ import annotations

from typing import Sequence

import torch

from capsel.cap_engine.batching import left_padded
from capsel.cap_engine.divergence import token_nll
from capsel.cap_engine.forward import pad_id
from capsel.models.loading import LoadedModel


def response_token_nll(
    loaded: LoadedModel, prefixes: Sequence[Sequence[int]], responses: Sequence[Sequence[int]]
) -> list[torch.Tensor]:
    """-log p of each response token given everything before it, one forward of left-padded [prefix; response].

    Only response tokens are scored (the prefix is context, never a target). With an empty prefix the
    first response token has nothing to be predicted from, so that row returns len(response) - 1 values.
    Runs with whatever grad mode the caller set.
    """
    sequences = [list(prefix) + list(response) for prefix, response in zip(prefixes, responses)]
    ids, mask = left_padded(sequences, pad_id(loaded), loaded.input_device)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    # Rows end in the last column, so the last (longest response + 1) columns hold every prediction needed.
    keep = min(max(len(response) for response in responses) + 1, ids.shape[1])
    kwargs = {"logits_to_keep": keep} if loaded.supports_logits_to_keep else {}
    logits = loaded.model(
        input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=False, **kwargs
    ).logits[:, -keep:]
    losses = []
    for row, (prefix, response) in enumerate(zip(prefixes, responses)):
        n_scored = len(response) if prefix else len(response) - 1
        predictors = logits[row, keep - 1 - n_scored: keep - 1]
        targets = ids[row, ids.shape[1] - n_scored:]
        losses.append(token_nll(predictors, targets).cpu())
    return losses
