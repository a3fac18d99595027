"""Pretraining documents as token ids, packed into fixed-length training blocks."""

from __future__ import annotations

import random
from collections.abc import Iterator

import torch
from transformers import PreTrainedTokenizerBase

from capsel_lab.world.corpus import Document


def document_ids(doc: Document, tokenizer: PreTrainedTokenizerBase) -> list[int]:
    """BOS + text + EOS; a question document joins prompt and response ids exactly as CAP does."""
    if doc.kind == "qa":
        ids = tokenizer(doc.prompt).input_ids + tokenizer(doc.response, add_special_tokens=False).input_ids
    else:
        ids = tokenizer(doc.text).input_ids
    return ids + [tokenizer.eos_token_id]


def packed_batches(docs: list[list[int]], seq_len: int, batch_size: int, seed: int) -> Iterator[torch.Tensor]:
    """Endless (batch_size, seq_len) blocks: each epoch shuffles the documents and packs them end to end."""
    rng = random.Random(seed)
    buffer: list[int] = []
    blocks: list[list[int]] = []
    while True:
        order = list(range(len(docs)))
        rng.shuffle(order)
        for index in order:
            buffer.extend(docs[index])
            while len(buffer) >= seq_len:
                blocks.append(buffer[:seq_len])
                buffer = buffer[seq_len:]
                if len(blocks) == batch_size:
                    yield torch.tensor(blocks, dtype=torch.long)
                    blocks = []
