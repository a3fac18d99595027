"""Cut huge texts before tokenising them, keeping exactly the ids the method keeps (the first R, the last P).

Tokenising a 1M-character text builds hundreds of megabytes of encodings to keep 48 or 256 ids. A text
is cut only at a *safe boundary* (`is_safe_boundary`): a space with a character before it that is neither
whitespace nor "▁", and a letter after it. For the tokenizers this module accepts (`HugeTextCut.of`), the ids
of the text before such a boundary and of the text from it on are exactly the ids of the whole text, split
there:

- byte-level BPE with GPT-2's pre-tokenizer regex and no normalizer (SmolLM2, GPT-2 and kin): the
  regex ends a pre-token before such a space (no pattern takes a trailing space; ` ?\\p{L}+` takes the
  space with the letters after it), and BPE never merges across pre-tokens;
- SentencePiece-style BPE whose normalizer only turns spaces into "▁" (Gemma): BPE merges only into
  vocabulary entries, so when no entry holds a "▁" that has a non-"▁" before it and a letter or the
  entry's end after it (checked on the whole vocabulary), no token can cross the boundary, and merges on
  either side do not interact.

In both, no added token (matched in the raw text before anything else) may hold a space after a non-space.

Every token covers at most `max_chars` characters of the text (the longest vocabulary or added entry;
a byte-level symbol is at least one byte of a character). So the first R ids end within R·max_chars
characters, and a cut at the first safe boundary past (R + 2)·max_chars keeps them. For the last P ids
the cut is at the safe boundary before the last one that leaves (P + 2)·max_chars characters after it:
what the tokenizer or a chat template puts before the kept text (BOS, the turn header, a trimmed space)
can change ids up to that second boundary only, and more than P ids follow it.

Both bounds need every character to give at least one id. A byte-level vocabulary can lack a byte's
symbol, and the tokenizer then drops that byte without an id (SmolLM2 lacks six ASCII controls: a text of
them alone tokenises to nothing). A character whose every byte is dropped gives no id, so a run of them
could push the first R ids past any window: a text holding such a character is tokenised whole, and a
vocabulary lacking a continuation byte (0x80-0xBF, in every multi-byte character) is never cut for. A
SentencePiece-style model needs byte fallback or an unfused unknown token for the same reason (a fused one
covers a whole run of unknown characters with one id).

A text with no safe boundary where one is needed, a tokenizer of another kind, or a chat template that
does not put the user's text in verbatim (or stripped) is tokenised whole, as before.
"""

from __future__ import annotations

import json
import re
import weakref
from dataclasses import dataclass

# Texts shorter than this many windows gain too little from a cut to be worth the search.
MIN_GAIN = 4
# ids beyond R or P kept in the window, so the counts the exclusions compare stay above any minimum
SPARE_IDS = 2
_PROBE = "  probe text  "
_plans: "weakref.WeakKeyDictionary[object, HugeTextCut | None]" = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class HugeTextCut:
    """How far a text can be cut for one tokenizer (see the module's argument)."""

    max_chars: int
    chat_safe: bool
    no_id_chars: str = ""  # characters the tokenizer drops without an id: texts holding one are not cut

    @classmethod
    def of(cls, tokenizer) -> "HugeTextCut | None":
        """The tokenizer's cap, or None when the argument does not hold for it (then texts are not cut)."""
        if tokenizer not in _plans:
            _plans[tokenizer] = _plan(tokenizer)
        return _plans[tokenizer]

    def head(self, text: str, n_ids: int) -> str:
        """A prefix of `text` whose ids start with the first `n_ids` ids of `text` (special tokens aside)."""
        window = (n_ids + SPARE_IDS) * self.max_chars
        if len(text) < MIN_GAIN * window or self._drops_a_char_of(text):
            return text
        boundary = _next_boundary(text, window)
        return text if boundary is None else text[:boundary]

    def tail(self, text: str, n_ids: int) -> str:
        """A suffix of `text` whose ids, whatever comes before them, end with the last `n_ids` ids of `text`."""
        window = (n_ids + SPARE_IDS) * self.max_chars
        if len(text) < MIN_GAIN * window or self._drops_a_char_of(text):
            return text
        last = _last_boundary(text, len(text) - window)
        before = None if last is None else _last_boundary(text, last - 1)
        return text if before is None else text[before:]

    def _drops_a_char_of(self, text: str) -> bool:
        return any(char in text for char in self.no_id_chars)


def is_safe_boundary(text: str, position: int) -> bool:
    """A space with a character before it that is neither whitespace nor "▁", and a letter after it."""
    return (0 < position < len(text) - 1 and text[position] == " " and not text[position - 1].isspace()
            and text[position - 1] != "▁" and text[position + 1].isalpha())


def _next_boundary(text: str, start: int) -> int | None:
    position = text.find(" ", start)
    while position != -1 and not is_safe_boundary(text, position):
        position = text.find(" ", position + 1)
    return None if position == -1 else position


def _last_boundary(text: str, end: int) -> int | None:
    position = text.rfind(" ", 0, end + 1)
    while position > 0 and not is_safe_boundary(text, position):
        position = text.rfind(" ", 0, position)
    return position if position > 0 else None


def _plan(tokenizer) -> HugeTextCut | None:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:  # a slow tokenizer: its internals are not described
        return None
    spec = json.loads(backend.to_str())
    model = spec.get("model") or {}
    vocab = model.get("vocab") or {}
    added = [entry["content"] for entry in spec.get("added_tokens") or []]
    if model.get("type") != "BPE" or not vocab or any(re.search(r"\S ", content) for content in added):
        return None
    max_chars = max(len(entry) for entry in [*vocab, *added])
    if _byte_level_regex(spec):
        missing = [byte for byte, symbol in _BYTE_SYMBOLS.items() if symbol not in vocab]
        if any(0x80 <= byte <= 0xBF for byte in missing):
            return None
        dropped = "".join(chr(byte) for byte in missing if byte < 0x80)
        return HugeTextCut(max_chars, _keeps_user_text(tokenizer), dropped)
    unknown_has_ids = model.get("byte_fallback") or (model.get("unk_token") is not None and not model.get("fuse_unk"))
    if unknown_has_ids and _spaces_as_marks(spec, vocab):
        return HugeTextCut(max_chars, _keeps_user_text(tokenizer))
    return None


def _byte_symbols() -> dict[int, str]:
    """GPT-2's byte-level alphabet: the printable character that stands for each byte in the vocabulary."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    others = [byte for byte in range(256) if byte not in printable]
    return {**{byte: chr(byte) for byte in printable}, **{byte: chr(256 + n) for n, byte in enumerate(others)}}


_BYTE_SYMBOLS = _byte_symbols()


def _byte_level_regex(spec: dict) -> bool:
    pre = spec.get("pre_tokenizer") or {}
    return spec.get("normalizer") is None and pre.get("type") == "ByteLevel" and pre.get("use_regex", True)


def _spaces_as_marks(spec: dict, vocab: dict) -> bool:
    normalizer, pre = spec.get("normalizer") or {}, spec.get("pre_tokenizer")
    replaces_spaces = (normalizer.get("type") == "Replace" and normalizer.get("pattern") == {"String": " "}
                       and normalizer.get("content") == "▁")
    # after the normalizer there is no space left for this split to act on
    inert_split = pre is None or (pre.get("type") == "Split" and pre.get("pattern") == {"String": " "})
    return replaces_spaces and inert_split and not any(_crosses_a_boundary(entry) for entry in vocab)


def _crosses_a_boundary(entry: str) -> bool:
    for index in range(1, len(entry)):
        if entry[index] == "▁" and entry[index - 1] != "▁":
            after = entry[index + 1: index + 2]
            if not after or after.isalpha():
                return True
    return False


def _keeps_user_text(tokenizer) -> bool:
    """Whether the chat template puts the user's text in as given or stripped (rendered on a probe)."""
    if not getattr(tokenizer, "chat_template", None):
        return False
    try:
        rendered = tokenizer.apply_chat_template([{"role": "user", "content": _PROBE}], add_generation_prompt=True,
                                                 tokenize=False)
    except Exception:  # noqa: BLE001 (a template that cannot render a probe is simply not cut for)
        return False
    return isinstance(rendered, str) and (_PROBE in rendered or _PROBE.strip() in rendered)
