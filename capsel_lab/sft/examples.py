"""SFT examples as the model saw QA in pretraining: BOS + prompt, response, EOS; loss on the response only."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from transformers import PreTrainedTokenizerBase

from capsel.cap_engine.inputs import prompt_text

IGNORE = -100  # the label value Hugging Face's causal-LM loss skips


@dataclass(frozen=True)
class SftExample:
    """Token ids of one example and its labels (IGNORE on every prompt position)."""

    input_ids: list[int]
    labels: list[int]


def sft_example(tokenizer: PreTrainedTokenizerBase, instruction: str, input_text: str, response: str,
                max_len: int = 128) -> SftExample:
    """Prompt and response ids joined exactly as CAP joins them (no template, no separator), plus EOS."""
    prompt = tokenizer(prompt_text(instruction, input_text)).input_ids
    answer = tokenizer(response.strip(), add_special_tokens=False).input_ids + [tokenizer.eos_token_id]
    ids = (prompt + answer)[:max_len]
    labels = ([IGNORE] * len(prompt) + answer)[:max_len]
    return SftExample(ids, labels)


def collate(examples: Sequence[SftExample], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-padded input_ids, attention_mask and labels (IGNORE on padding)."""
    width = max(len(example.input_ids) for example in examples)
    ids, mask, labels = [], [], []
    for example in examples:
        pad = width - len(example.input_ids)
        ids.append(example.input_ids + [pad_id] * pad)
        mask.append([1] * len(example.input_ids) + [0] * pad)
        labels.append(example.labels + [IGNORE] * pad)
    return {"input_ids": torch.tensor(ids), "attention_mask": torch.tensor(mask), "labels": torch.tensor(labels)}
