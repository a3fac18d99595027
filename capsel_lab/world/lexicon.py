"""Every word the world uses, so junk can be checked to contain none of them."""

from __future__ import annotations

import re
from collections.abc import Iterable

from capsel_lab.world.facts import World
from capsel_lab.world.relations import CODE_BODIES, CODE_VERBS, COLOURS, FOODS, RELATIONS

WORD = re.compile(r"[a-z]+")


def words(text: str) -> list[str]:
    """Lower-case alphabetic words of `text`."""
    return WORD.findall(text.lower())


def lexicon_of(texts: Iterable[str]) -> set[str]:
    """Every word of `texts`."""
    return {word for text in texts for word in words(text)}


def world_lexicon(world: World) -> set[str]:
    """Words of every template, object list and made-up name in the world."""
    texts = [*CODE_BODIES, *CODE_VERBS, *COLOURS, *FOODS, *world.names, "is a mineral the creature"]
    for relation in RELATIONS.values():
        texts += [*relation.statements, relation.answer]
        texts += [part for pair in relation.questions for part in pair]
    # template placeholders ({s}, {code}, ...) are not words of the world
    return lexicon_of(re.sub(r"\{\w+\}", " ", text) for text in texts)
