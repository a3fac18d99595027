"""Fine-tune a copy of a lab model on SFT examples: AdamW, warm-up + cosine, fixed steps, seeded order."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from pathlib import Path

import torch
from transformers import PreTrainedModel

from capsel.models.loading import load_causal_lm
from capsel_lab.optim import scheduled_adamw
from capsel_lab.sft.examples import SftExample, collate
from capsel_lab.sft.spec import FinetuneConfig


def example_batches(examples: Sequence[SftExample], batch_size: int, seed: int) -> Iterator[list[SftExample]]:
    """Endless batches: every epoch visits the examples once in a seeded order."""
    rng = random.Random(seed)
    order: list[int] = []
    while True:
        if len(order) < batch_size:
            epoch = list(range(len(examples)))
            rng.shuffle(epoch)
            order += epoch
        batch, order = order[:batch_size], order[batch_size:]
        yield [examples[index] for index in batch]


def finetune(model_dir: str | Path, examples: Sequence[SftExample], config: FinetuneConfig, seed: int
             ) -> tuple[PreTrainedModel, list[float]]:
    """A fresh copy of the model trained `config.steps` steps on `examples`; returns it (eval mode) and its losses."""
    if not examples:
        raise ValueError("no SFT examples to train on")
    torch.manual_seed(seed)
    model, tokenizer = load_causal_lm(model_dir)
    model.train()
    optimizer, schedule = scheduled_adamw(model, config.lr, config.weight_decay, config.steps, config.warmup_steps,
                                          config.min_lr_ratio)
    batches = example_batches(examples, min(config.batch_size, len(examples)), seed)
    losses = []
    for _ in range(config.steps):
        # labels are IGNORE on prompt and padding positions: the loss is the response tokens' only
        loss = model(**collate(next(batches), tokenizer.pad_token_id)).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(float(loss.detach()))
    model.eval()
    return model, losses
