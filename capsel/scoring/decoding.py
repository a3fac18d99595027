"""Greedy decoding on a prefilled cache: argmax, at most R tokens, stopping before EOS."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import torch

from capsel.models.loading import LoadedModel
from capsel.scoring.batching import right_padded
from capsel.scoring.forward import PromptState, extend, pad_id, prefill


class GreedyRows:
    """The greedy continuation of each row so far, and which rows have stopped (EOS or horizon)."""

    def __init__(self, n_rows: int, horizon: int, eos_ids: frozenset[int]):
        self.tokens: list[list[int]] = [[] for _ in range(n_rows)]
        self.finished = [False] * n_rows
        self.horizon = horizon
        self.eos_ids = eos_ids

    def advance(self, next_logits: torch.Tensor) -> None:
        """Append each running row's argmax token, or stop the row on EOS / at the horizon."""
        for row, token in enumerate(next_logits.argmax(-1).tolist()):
            if self.finished[row]:
                continue
            if token in self.eos_ids:
                self.finished[row] = True
                continue
            self.tokens[row].append(token)
            if len(self.tokens[row]) >= self.horizon:
                self.finished[row] = True

    def token_at(self, position: int) -> list[int | None]:
        """Each row's token at 0-based response position, or None past its end."""
        return [tokens[position] if position < len(tokens) else None for tokens in self.tokens]

    @property
    def all_finished(self) -> bool:
        """True once no row can grow any more."""
        return all(self.finished)


def step_tensors(tokens: Sequence[int | None], pad: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """One column of ids and mask from per-row tokens (None: a masked pad)."""
    return right_padded([[] if token is None else [token] for token in tokens], pad, device, width=1)


def greedy_generate(
    loaded: LoadedModel, prompts: Sequence[Sequence[int]], horizon: int, vision: Mapping[str, Any] | None = None
) -> list[list[int]]:
    """Greedy continuation of each prompt: one prefill (with a VLM prompt's `vision` tensors), then cached steps."""
    if not prompts:
        return []
    state = prefill(loaded, prompts, vision)
    rows = GreedyRows(len(prompts), horizon, loaded.info.eos_token_ids)
    rows.advance(state.last_logits)
    while not rows.all_finished:
        feed_last_tokens(loaded, state, rows)
        rows.advance(state.last_logits)
    return rows.tokens


def feed_last_tokens(loaded: LoadedModel, state: PromptState, rows: GreedyRows) -> None:
    """Feed each row's newest token (finished rows get a masked pad) and keep the next logits."""
    ids, mask = step_tensors(rows.token_at(state.fed), pad_id(loaded), loaded.input_device)
    state.last_logits = extend(loaded, state, ids, mask, keep_last=1)[:, -1]
