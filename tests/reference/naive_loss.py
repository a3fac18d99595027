"""Held-out loss computed plainly: one unpadded forward per row with transformers, no capsel code on the way."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import torch


def naive_heldout_loss(model, tokenizer, rows: list[dict], prompt_tokens: int, chat: bool) -> dict[str, tuple]:
    """{domain or '*': (mean NLL per response token, rows, tokens)} of `rows` ({domain, instruction, [input],
    response or output})."""
    sums, tokens, counts = defaultdict(float), defaultdict(int), defaultdict(int)
    for row in rows:
        nll, n_tokens = naive_row_nll(model, tokenizer, row, prompt_tokens, chat)
        for domain in ("*", row.get("domain", "all")):
            sums[domain] += nll
            tokens[domain] += n_tokens
            counts[domain] += 1
    return {domain: (sums[domain] / tokens[domain], counts[domain], tokens[domain]) for domain in counts}


def naive_row_nll(model, tokenizer, row: dict, prompt_tokens: int, chat: bool) -> tuple[float, int]:
    """One row's response NLL sum (float64 log-softmax) and its response token count."""
    extra = (row.get("input") or "").strip()
    prompt = row["instruction"].strip() + (f"\n{extra}" if extra else "")
    if chat:
        prompt_ids = list(tokenizer.apply_chat_template([{"role": "user", "content": prompt}],
                                                        add_generation_prompt=True, return_dict=True)["input_ids"])
    else:
        prompt_ids = tokenizer(prompt).input_ids
    prompt_ids = prompt_ids[-prompt_tokens:]
    response = row["response"] if "response" in row else row["output"]
    response_ids = tokenizer(response.strip(), add_special_tokens=False).input_ids
    ids = torch.tensor([prompt_ids + response_ids])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].double()
    logp = torch.log_softmax(logits, -1)
    return -sum(float(logp[len(prompt_ids) + i - 1, token]) for i, token in enumerate(response_ids)), len(response_ids)


def load_plain(model_dir: Path, adapter_dir: Path | None = None):
    """The model as a user would load it: transformers, then peft for an adapter."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    if adapter_dir is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, adapter_dir).eval()
    return model
