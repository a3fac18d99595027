"""Pronounceable made-up names, so world entities never collide with template words."""

from __future__ import annotations

import random

_ONSETS = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "gr", "kr", "th", "sk"]
_VOWELS = ["a", "e", "i", "o", "u", "ae", "io", "ou"]
_CODAS = ["", "", "", "n", "r", "l", "s", "th", "x", "m"]


def _syllable(rng: random.Random) -> str:
    return rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)


def unique_names(rng: random.Random, count: int, taken: set[str], syllables: tuple[int, int] = (2, 3)) -> list[str]:
    """`count` new lower-case names of 2-3 syllables that are not in `taken` (which is updated)."""
    names: list[str] = []
    while len(names) < count:
        name = "".join(_syllable(rng) for _ in range(rng.randint(*syllables)))
        if len(name) < 5 or name in taken:
            continue
        taken.add(name)
        names.append(name)
    return names
