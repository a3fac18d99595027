"""Near-copies that the paper's dedup normalisation (NFKC, casefold, whitespace collapse) folds together."""

from __future__ import annotations

import random

_FULLWIDTH_OFFSET = 0xFEE0  # '!'..'~' map to U+FF01..U+FF5E, which NFKC maps back
_ODD_SPACES = ["\u00a0", "\u3000", "\u2002"]


def _case(rng: random.Random, text: str) -> str:
    return rng.choice([str.upper, str.lower, str.swapcase, str.title])(text)


def _whitespace(rng: random.Random, text: str) -> str:
    runs = ["  ", "\t", " \n ", "   "]
    spaced = "".join(rng.choice(runs) if char == " " and rng.random() < 0.5 else char for char in text)
    return rng.choice(["", " ", "\n"]) + spaced + rng.choice(["", "  ", "\t"])


def _compat(rng: random.Random, text: str) -> str:
    out = []
    for char in text:
        if char == " " and rng.random() < 0.3:
            out.append(rng.choice(_ODD_SPACES))
        elif "!" <= char <= "~" and rng.random() < 0.3:
            out.append(chr(ord(char) + _FULLWIDTH_OFFSET))
        else:
            out.append(char)
    return "".join(out)


VARIANTS = {"case": _case, "whitespace": _whitespace, "nfkc": _compat}


def near_copy(rng: random.Random, instruction: str, given: str) -> tuple[str, str, str]:
    """(instruction, input, variant names) differing in raw text but equal after normalisation."""
    while True:
        names = sorted(rng.sample(sorted(VARIANTS), rng.randint(1, 2)))
        new_instruction, new_input = instruction, given
        for name in names:
            new_instruction = VARIANTS[name](rng, new_instruction)
            new_input = VARIANTS[name](rng, new_input) if new_input else new_input
        if (new_instruction, new_input) != (instruction, given):
            return new_instruction, new_input, "+".join(names)
