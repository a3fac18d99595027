"""A tiny base model and a tiny published selection for fine-tuning tests, and the loss to check training by.

The rows are word-level text the tiny tokenizer knows, each response a fixed function of its prompt, so a few
steps of training visibly lower the loss on them. dataset_info.json is written by the publisher's own helper.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import torch
import transformers as tf

from capsel.cap_engine.prompt_format import prompt_token_ids
from capsel.publish.data_files import llamafactory_info
from tests.fixtures.tiny_models import build_model, build_tokenizer, save_model_dir

# A ChatML-like template over the word vocabulary: w990 opens a turn, w991 ends it, w993/w994/w995 name the
# user, the assistant and the system. Turns differ by role, as LlamaFactory's template parser needs.
ROLE_CHAT_TEMPLATE = (
    "<s>{% for message in messages %}w990 "
    "{{ 'w993' if message['role'] == 'user' else ('w994' if message['role'] == 'assistant' else 'w995') }} "
    "{{ message['content'] }} w991 {% endfor %}{% if add_generation_prompt %}w990 w994 {% endif %}"
)


def tiny_base_model(path: Path, chat: bool = False, seed: int = 0, layers: int = 2) -> Path:
    """A random tiny llama (and its word-level tokenizer, with a chat template if `chat`) saved to `path`; CAP
    scoring needs at least 4 layers."""
    tokenizer = build_tokenizer()
    if chat:
        tokenizer.chat_template = ROLE_CHAT_TEMPLATE
    return save_model_dir(path, build_model("llama", seed=seed, hidden=32, layers=layers), tokenizer)


def tiny_rows(n_rows: int) -> list[dict]:
    """Alpaca rows whose response words are the prompt's words shifted by 100 (so they can be learnt)."""
    rows = []
    for index in range(n_rows):
        words = [10 + (index * 7 + k * 3) % 80 for k in range(4)]
        rows.append({
            "instruction": " ".join(f"w{word}" for word in words[:3]),
            "input": f"w{words[3]}" if index % 2 else "",
            "output": " ".join(f"w{word + 100}" for word in words + words[:2]),
        })
    return rows


def tiny_selection(folder: Path, rows: list[dict]) -> Path:
    """A published-like selection folder: data.jsonl and the publisher's dataset_info.json, named after the folder."""
    folder.mkdir(parents=True)
    (folder / "data.jsonl").write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    (folder / "dataset_info.json").write_bytes(orjson.dumps(llamafactory_info(folder.name)))
    return folder


def prompt_text(row: dict) -> str:
    """The prompt text capsel scores: instruction, then a newline and the input when there is one."""
    return row["instruction"].strip() + ("\n" + row["input"].strip() if row["input"].strip() else "")


def training_example_ids(tokenizer, row: dict, prompt_format: str, eos_ids: list[int]) -> tuple[list[int], list[int]]:
    """Prompt ids as capsel scores them, and the response ids followed by the end-of-turn ids trained on."""
    prompt = prompt_token_ids(tokenizer, [prompt_text(row)], prompt_format)[0]
    response = tokenizer(row["output"].strip(), add_special_tokens=False).input_ids
    return prompt, response + eos_ids


@torch.no_grad()
def response_loss(model: tf.PreTrainedModel, examples: list[tuple[list[int], list[int]]]) -> float:
    """Mean cross-entropy of the response tokens given their prompts, computed independently of LlamaFactory."""
    model.eval()
    total, count = 0.0, 0
    for prompt, response in examples:
        ids = torch.tensor([prompt + response])
        labels = torch.tensor([[-100] * len(prompt) + response])
        logits = model(ids).logits[:, :-1].float()
        targets = labels[:, 1:]
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                                                 ignore_index=-100, reduction="sum")
        total += float(loss)
        count += int((targets != -100).sum())
    return total / count
