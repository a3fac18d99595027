"""Held-out loss: the token-weighted mean NLL of each reference response after its prompt, overall and per domain.

The prompt ids are exactly the engine's (the prompt format in use, the last P ids, huge texts cut the same
way); all the response ids follow (no R cut), as many as fit in the model's context.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.inputs import build_inputs, response_token_ids
from capsel.evaluation.row_outcomes import RowOutcome
from capsel.ingest.example_file import Example
from capsel.models.loading import LoadedModel
from capsel.scorers.response_loss import response_token_nll


@dataclass(frozen=True)
class LossRow:
    """One example's ids: the prompt as the engine cuts it, then as much of the response as the context holds."""

    domain: str
    prompt_ids: list[int]
    response_ids: list[int]


def loss_rows(examples: Sequence[Example], tokenizer, config: ScoringConfig, max_length: int) -> list[LossRow]:
    """Each example's prompt ids (the engine's) and response ids (all of them, up to `max_length` in total)."""
    prompts = build_inputs([example.text for example in examples], tokenizer, config)
    responses = response_token_ids(tokenizer, [example.text.response for example in examples])
    return [
        LossRow(example.domain, prompt.prompt_ids, response[: max(0, max_length - len(prompt.prompt_ids))])
        for example, prompt, response in zip(examples, prompts, responses)
    ]


def context_length(loaded: LoadedModel) -> int:
    """The most positions the model takes (its config's max_position_embeddings)."""
    text_config = loaded.model.config.get_text_config()
    return int(getattr(text_config, "max_position_embeddings", None) or 1 << 31)


@torch.inference_mode()
def heldout_loss(loaded: LoadedModel, rows: Sequence[LossRow], batch_size: int = 8,
                 on_rows: Callable[[int], None] = lambda n: None) -> list[RowOutcome]:
    """Each row's response NLL sum and token count (metric 'loss'), in row order; a row without response ids
    (its prompt fills the context) counts with 0 tokens."""
    outcomes: dict[int, RowOutcome] = {}
    # batches of similar length waste less padding; each row's sum does not depend on the order
    order = sorted(range(len(rows)), key=lambda index: len(rows[index].prompt_ids) + len(rows[index].response_ids))
    for start in range(0, len(order), batch_size):
        batch = order[start:start + batch_size]
        scored = [index for index in batch if rows[index].response_ids]
        nlls = response_token_nll(loaded, [rows[index].prompt_ids for index in scored],
                                  [rows[index].response_ids for index in scored]) if scored else []
        for index, nll in zip(scored, nlls):
            outcomes[index] = RowOutcome("loss", index, rows[index].domain, float(nll.double().sum()), nll.numel())
        for index in set(batch) - set(scored):
            outcomes[index] = RowOutcome("loss", index, rows[index].domain, 0.0, 0)
        on_rows(len(batch))
    return [outcomes[index] for index in range(len(rows))]
