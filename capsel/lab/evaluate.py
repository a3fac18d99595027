"""Held-out question accuracy: does the model's greedy answer contain the expected answer?"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from capsel.lab.world.facts import DOMAINS, World
from capsel.lab.world.render import n_questions, prompt_text, question


def greedy_answer(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, prompt: str, max_new_tokens: int = 48) -> str:
    """Greedy continuation of `prompt` (with BOS), stopped at EOS, decoded."""
    ids = tokenizer(prompt, return_tensors="pt").input_ids
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=max_new_tokens, do_sample=False,
                             eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    return tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True)


def is_correct(generation: str, answer: str) -> bool:
    """The expected answer occurs in the generation, not as part of a longer word or number."""
    return re.search(rf"(?<![\w]){re.escape(answer)}(?![\w])", generation) is not None


def answer_accuracy(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, questions: Sequence[dict]) -> float:
    """Share of held-out records (instruction, input, answer) answered correctly; nan when empty."""
    if not questions:
        return float("nan")
    hits = sum(
        is_correct(greedy_answer(model, tokenizer, prompt_text(q["instruction"], q["input"])), q["answer"])
        for q in questions
    )
    return hits / len(questions)


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
