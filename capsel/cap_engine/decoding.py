"""Greedy decoding on a prefilled cache: argmax, at most R tokens, stopping before EOS.

The bookkeeping (each row's tokens, length and whether it stopped) stays on the model's device, so a step
launches without waiting for the previous one to reach the host; on CUDA the stop check trails one step
behind (decode_while).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import torch

from capsel.cap_engine.divergence import BlockStates
from capsel.cap_engine.forward import PromptState, extend, pad_id, prefill
from capsel.cap_engine.graph_steps import StepGraph, step_graph
from capsel.cap_engine.greedy_head import argmax_only
from capsel.models.loading import LoadedModel


class GreedyRows:
    """The greedy continuation of each row so far, and which rows have stopped (EOS or horizon), on a device."""

    def __init__(self, n_rows: int, horizon: int, eos_ids: frozenset[int], device: torch.device, pad: int = 0):
        self.horizon = horizon
        self.ids = torch.full((n_rows, horizon), pad, dtype=torch.long, device=device)
        self.lengths = torch.zeros(n_rows, dtype=torch.long, device=device)
        self.finished = torch.zeros(n_rows, dtype=torch.bool, device=device)
        self.eos_ids = torch.tensor(sorted(eos_ids), dtype=torch.long, device=device)
        self.pad = pad
        self.steps = 0

    def advance(self, next_logits: torch.Tensor) -> None:
        """Append each running row's argmax token, or stop the row on EOS / at the horizon."""
        if self.steps >= self.horizon:  # every row has stopped by now
            return
        token = next_logits.argmax(-1).to(self.ids.device)
        running = ~self.finished
        stops = running & torch.isin(token, self.eos_ids)
        grows = running & ~stops
        # A running row has grown at every step so far, so its next token goes in column `steps`.
        self.ids[:, self.steps] = torch.where(grows, token, self.ids[:, self.steps])
        self.lengths += grows
        self.finished |= stops | (self.lengths >= self.horizon)
        self.steps += 1

    def column(self, position: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(ids, mask) of shape [rows, 1]: each row's token at 0-based response position, a masked pad past its end."""
        present = position < self.lengths
        ids = torch.where(present, self.ids[:, position], self.pad)
        return ids[:, None], present.long()[:, None]

    @property
    def tokens(self) -> list[list[int]]:
        """Each row's tokens, on the host (one copy for the batch)."""
        return [row[:length] for row, length in zip(self.ids.tolist(), self.lengths.tolist())]

    @property
    def running(self) -> torch.Tensor:
        """True for each row that can still grow (on the device)."""
        return ~self.finished


def greedy_generate(
    loaded: LoadedModel, prompts: Sequence[Sequence[int]], horizon: int,
    visions: Sequence[Mapping[str, Any]] | None = None,
) -> list[list[int]]:
    """Greedy continuation of each prompt: one prefill (with a VLM's processor tensors per prompt), then cached
    steps."""
    if not prompts:
        return []
    state = prefill(loaded, prompts, visions, room=horizon)
    rows = GreedyRows(len(prompts), horizon, loaded.info.eos_token_ids, state.last_logits.device, pad_id(loaded))
    rows.advance(state.last_logits)
    decode_while(loaded, state, rows, lambda: rows.running.any())
    return rows.tokens


def decode_while(
    loaded: LoadedModel, state: PromptState, rows: GreedyRows, needed: Callable[[], torch.Tensor],
    kept: BlockStates | None = None,
) -> None:
    """Feed each row's newest token and advance while `needed()` (a device flag) holds, at most to the horizon.

    On CUDA the host reads a step's flag only after launching the next step, so the device never idles
    waiting for the host; the one step that may run past the end feeds tokens no result reads (aligned
    positions are counted from the tokens, and a later branch starts from the rewound prompt).
    `kept`: the sink the block hooks fill, when a captured step (graph_steps) must keep them in slots.
    """
    if not bool(needed()):
        return
    steps = step_graph(loaded, state, rows.horizon, kept)
    try:
        # A step's logits feed only its argmax (rows.advance), before the next step.
        with argmax_only(loaded):
            _decode(loaded, state, rows, needed, steps)
    finally:
        if steps is not None:
            steps.finish(state)


def _decode(
    loaded: LoadedModel, state: PromptState, rows: GreedyRows, needed: Callable[[], torch.Tensor],
    steps: StepGraph | None,
) -> None:
    trailing = state.last_logits.device.type == "cuda"
    unread: tuple[torch.Tensor, Any] | None = None
    while state.fed < rows.horizon:
        ids, mask = rows.column(state.fed)
        ids = ids.to(loaded.input_device)
        if steps is None:
            state.last_logits = extend(loaded, state, ids, mask, keep_last=1)[:, -1]
        else:
            steps.feed(state, ids, mask)
        rows.advance(state.last_logits)
        flag = needed()
        if not trailing:
            if not bool(flag):
                return
            continue
        latest = (flag.to("cpu", non_blocking=True), torch.cuda.Event())
        latest[1].record()
        if unread is not None:
            unread[1].synchronize()
            if not bool(unread[0]):
                return
        unread = latest
