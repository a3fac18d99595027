"""The paper's dedup key and the ids derived from it; other parts of capsel rely on these exactly."""

from __future__ import annotations

import hashlib
import unicodedata
from typing import Literal, get_args

# What the key is made of: the text alone (the paper's), or the text and the images' sha256s.
DedupKeyMode = Literal["text", "text+images"]
DEDUP_KEY_MODES: tuple[str, ...] = get_args(DedupKeyMode)

# U+001F is whitespace to str.split(), so the collapse below removes it from normalised
# text: joining with it can never make two different (instruction, input) pairs collide.
KEY_SEPARATOR = "\x1f"


def normalize_text(text: str) -> str:
    """NFKC-normalise, Unicode-casefold, collapse every whitespace run to one space, trim."""
    # Two exact shortcuts, tested against the plain definition: NFKC leaves ASCII as it is and
    # casefold maps ASCII as lower() does (lower has a fast ASCII path, casefold has none).
    folded = text.lower() if text.isascii() else unicodedata.normalize("NFKC", text).casefold()
    # Every whitespace character but the space is unprintable, so a printable text without
    # double, leading or trailing spaces has nothing to collapse or trim.
    if folded.isprintable() and "  " not in folded and folded[:1] != " " and folded[-1:] != " ":
        return folded
    # str.split() with no argument splits on runs of any Unicode whitespace (str.isspace),
    # the same set as the regex \s+, and drops leading/trailing runs: collapse and trim in one.
    return " ".join(folded.split())


def dedup_key(instruction: str, input_text: str = "") -> str:
    """Key of a candidate within its domain: normalised instruction and input (never the response)."""
    return normalize_text(instruction) + KEY_SEPARATOR + normalize_text(input_text)


def candidate_id(domain: str, key: str) -> str:
    """Stable 20-hex-digit id of a candidate: blake2b of the stripped domain and its dedup key."""
    return hashlib.blake2b((domain + KEY_SEPARATOR + key).encode(), digest_size=10).hexdigest()



def with_images(key: str, sha256s: list[str]) -> str:
    """The key with a row's image hashes in order (`--dedup-key text+images`); text-only keys never change.

    Normalised text holds no U+001F, so what follows the key's second separator can only be the hashes.
    """
    return key + KEY_SEPARATOR + " ".join(sha256s)
