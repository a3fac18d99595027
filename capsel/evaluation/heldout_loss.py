"""Held-out loss: the token-weighted mean NLL of each reference response after its prompt, overall and per domain.

The prompt ids are exactly the engine's (the prompt format in use, the last P ids, huge texts cut the same
way); all the response ids follow (no R cut), as many as fit in the model's context.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from capsel.baselines.response_loss import response_token_nll
from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.inputs import build_inputs, response_token_ids
from capsel.ingest.example_file import Example
from capsel.models.loading import LoadedModel

OVERALL = "*"


@dataclass(frozen=True)
class LossResult:
    """Mean NLL per response token over `n` rows holding `tokens` response tokens, for one domain or overall."""

    domain: str
    loss: float
    n: int
    tokens: int


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
                 on_rows: Callable[[int], None] = lambda n: None) -> list[LossResult]:
    """Token-weighted mean NLL of the response ids, overall (domain '*') and per domain, domains sorted."""
    sums: dict[str, float] = defaultdict(float)
    tokens: dict[str, int] = defaultdict(int)
    counts: dict[str, int] = defaultdict(int)
    # batches of similar length waste less padding; the sums do not depend on the order
    order = sorted(range(len(rows)), key=lambda index: len(rows[index].prompt_ids) + len(rows[index].response_ids))
    for start in range(0, len(order), batch_size):
        batch = [rows[index] for index in order[start:start + batch_size]]
        scored = [row for row in batch if row.response_ids]
        nlls = response_token_nll(loaded, [row.prompt_ids for row in scored],
                                  [row.response_ids for row in scored]) if scored else []
        for row, nll in zip(scored, nlls):
            for domain in (OVERALL, row.domain):
                sums[domain] += float(nll.double().sum())
                tokens[domain] += int(nll.numel())
        for row in batch:
            for domain in (OVERALL, row.domain):
                counts[domain] += 1
        on_rows(len(batch))
    return [
        LossResult(domain, sums[domain] / tokens[domain] if tokens[domain] else float("nan"), counts[domain],
                   tokens[domain])
        for domain in sorted(counts, key=lambda name: (name != OVERALL, name))
    ]
