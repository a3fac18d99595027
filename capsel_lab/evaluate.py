"""Held-out question accuracy: does the model's greedy answer contain the expected answer?"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from capsel_lab.world.facts import DOMAINS, World
from capsel_lab.world.render import n_questions, prompt_text, question


def greedy_answer(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, prompt: str, max_new_tokens: int = 48
) -> str:
    """Greedy continuation of `prompt` (with BOS), stopped at EOS, decoded."""
    ids = tokenizer(prompt, return_tensors="pt").input_ids
    with torch.no_grad():
        # transformers' stubs type `generate` as a Tensor attribute
        out = model.generate(  # type: ignore[operator]
            ids, max_new_tokens=max_new_tokens, do_sample=False,
            eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
        )
    return str(tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True))


def is_correct(generation: str, answer: str) -> bool:
    """The expected answer occurs in the generation, not as part of a longer word or number."""
    return re.search(rf"(?<![\w]){re.escape(answer)}(?![\w])", generation) is not None


def greedy_answers(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, prompts: Sequence[str],
                   max_new_tokens: int = 48, batch_size: int = 32) -> list[str]:
    """`greedy_answer` for many prompts, left-padded in batches (same answers, several times faster)."""
    side = tokenizer.padding_side
    tokenizer.padding_side = "left"  # generation continues after the last real token of every row
    answers = []
    try:
        for start in range(0, len(prompts), batch_size):
            batch = tokenizer(list(prompts[start:start + batch_size]), return_tensors="pt", padding=True)
            with torch.no_grad():
                out = model.generate(  # type: ignore[operator]  # see greedy_answer
                    **batch, max_new_tokens=max_new_tokens, do_sample=False,
                    eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                )
            answers += tokenizer.batch_decode(out[:, batch.input_ids.shape[1]:], skip_special_tokens=True)
    finally:
        tokenizer.padding_side = side
    return answers


def answer_accuracy(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, questions: Sequence[dict],
                    batch_size: int = 1) -> float:
    """Share of held-out records (instruction, input, answer) answered correctly; nan when empty."""
    if not questions:
        return float("nan")
    return sum(answer_hits(model, tokenizer, questions, batch_size)) / len(questions)


def answer_hits(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, questions: Sequence[dict],
                batch_size: int = 32) -> list[bool]:
    """Per held-out record: is the expected answer in the model's greedy answer (`is_correct`)?"""
    prompts = [prompt_text(q["instruction"], q["input"]) for q in questions]
    if batch_size == 1:
        answers = [greedy_answer(model, tokenizer, prompt) for prompt in prompts]
    else:
        answers = greedy_answers(model, tokenizer, prompts, batch_size=batch_size)
    return [is_correct(answer, q["answer"]) for answer, q in zip(answers, questions)]


def recall_report(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, world: World,
                  n_per_group: int = 20, seed: int = 0) -> dict[str, float]:
    """Accuracy per domain on three groups of facts: known and asked as pretraining asked them,
    known but only stated in prose, and never in pretraining (learnable)."""
    rng = random.Random(seed)
    report = {}
    for domain in DOMAINS:
        facts = world.by_domain(domain)
        groups = {
            "known, question seen": [(f, f.qa_templates[0]) for f in facts if f.qa_templates],
            "known, prose only": [(f, rng.randrange(n_questions(f))) for f in facts if f.known and not f.qa_templates],
            "never seen": [(f, rng.randrange(n_questions(f))) for f in facts if not f.known],
        }
        for group, pairs in groups.items():
            chosen = rng.sample(pairs, min(n_per_group, len(pairs)))
            questions = [dict(zip(("instruction", "input"), question(fact, template)), answer=fact.answer_key)
                         for fact, template in chosen]
            report[f"{domain}: {group}"] = answer_accuracy(model, tokenizer, questions)
    return report
