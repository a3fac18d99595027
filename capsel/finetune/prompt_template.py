"""Which LlamaFactory template trains a model in the prompt format capsel scores it with.

`chat`: no template named, so LlamaFactory 0.9.5 parses the tokenizer's own jinja chat template
(`get_template_and_fix_tokenizer` -> `parse_template`): the user turn is the prompt text, its default system
turn included, exactly what `apply_chat_template([user], add_generation_prompt=True)` gives when scoring.
`raw`: capsel's launcher registers `capsel_raw` (prompt text then response, EOS after it) and
`capsel_raw_bos` (the same after BOS) because the tokenizer's default special tokens decide the BOS when
scoring (`tokenizer(prompt).input_ids`), and LlamaFactory encodes every piece without special tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from capsel.cap_engine.prompt_format import CHAT, resolve_prompt_format
from capsel.errors import CapselError

RAW_TEMPLATE, RAW_BOS_TEMPLATE = "capsel_raw", "capsel_raw_bos"


@dataclass(frozen=True)
class TrainingPrompt:
    """The resolved prompt format and the LlamaFactory template that reproduces it (None: the tokenizer's own)."""

    prompt_format: str
    template: str | None


def adds_bos(tokenizer) -> bool:
    """True when the tokenizer's default special tokens put BOS before a text."""
    bos = tokenizer.bos_token_id
    return bos is not None and tokenizer("a").input_ids[:1] == [bos]


def training_prompt(requested: str, model_dir: Path) -> TrainingPrompt:
    """Resolve `requested` (auto|raw|chat) against the base model's tokenizer, as scoring does."""
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(model_dir)
    except (OSError, ValueError) as exc:
        raise CapselError(f"cannot load the base model's tokenizer from {model_dir}: {exc}") from exc
    prompt_format = resolve_prompt_format(requested, tokenizer)
    if prompt_format == CHAT:
        return TrainingPrompt(CHAT, None)
    return TrainingPrompt(prompt_format, RAW_BOS_TEMPLATE if adds_bos(tokenizer) else RAW_TEMPLATE)
