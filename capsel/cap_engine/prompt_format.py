"""How a candidate's prompt text becomes prompt ids: `raw` (the paper's protocol) or the model's `chat` template.

docs/method.md "The method, exactly": `raw` is `tokenizer(prompt).input_ids` with the tokenizer's default
special tokens; `chat` is `apply_chat_template([{"role": "user", "content": prompt}],
add_generation_prompt=True)`. `auto` is chat exactly when the tokenizer has a chat template, so a
base checkpoint keeps the paper's protocol and an instruct model gets the format it was tuned on.
"""

from __future__ import annotations

from typing import Literal, Sequence

from capsel.errors import CapselError, OptionError

PromptFormat = Literal["auto", "raw", "chat"]
RAW, CHAT, AUTO = "raw", "chat", "auto"
PROMPT_FORMATS = (AUTO, RAW, CHAT)


def has_chat_template(tokenizer) -> bool:
    """True when the tokenizer carries a chat template of its own."""
    return bool(getattr(tokenizer, "chat_template", None))


def resolve_prompt_format(requested: str, tokenizer) -> str:
    """`raw` or `chat` for this tokenizer; asking for chat from a model without a template is an error."""
    if requested not in PROMPT_FORMATS:
        raise OptionError(f"unknown prompt format {requested!r}; use auto, raw or chat")
    if requested == AUTO:
        return CHAT if has_chat_template(tokenizer) else RAW
    if requested == CHAT and not has_chat_template(tokenizer):
        raise CapselError("prompt format chat needs a chat template, and this model's tokenizer has none; "
                          "use raw (the paper's protocol for base models) or auto")
    return requested


def prompt_token_ids(tokenizer, prompts: Sequence[str], prompt_format: str) -> list[list[int]]:
    """Full (untruncated) prompt ids of each prompt text in a resolved format."""
    if not prompts:
        return []
    if prompt_format == RAW:
        return [list(ids) for ids in tokenizer(list(prompts)).input_ids]
    if prompt_format == CHAT:
        conversations = [[{"role": "user", "content": prompt}] for prompt in prompts]
        encoded = tokenizer.apply_chat_template(conversations, add_generation_prompt=True, return_dict=True)
        return [list(ids) for ids in encoded["input_ids"]]
    raise ValueError(f"prompt format {prompt_format!r} is not resolved; call resolve_prompt_format first")
