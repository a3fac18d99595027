"""The pretraining corpus: prose about every known fact, plus answered questions for a share of them."""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass

from capsel_lab.world.facts import Fact, World
from capsel_lab.world.relations import RELATIONS
from capsel_lab.world.render import answer, prompt_text, question, statement

_INTROS = {"mineral": "{S} is a mineral.", "creature": "The {s} is a creature."}


@dataclass(frozen=True)
class Document:
    """One pretraining document: prose (`text`), or a question `prompt` with its `response`.

    A question/answer document is tokenized the way CAP scores candidates (prompt with BOS,
    then the response tokens directly after it), so the SFT format is familiar to the model.
    """

    kind: str
    text: str = ""
    prompt: str = ""
    response: str = ""

    def as_record(self) -> dict[str, str]:
        """JSON-ready form."""
        if self.kind == "qa":
            return {"kind": "qa", "prompt": self.prompt, "response": self.response}
        return {"kind": "text", "text": self.text}


def _science_prose(world: World, rng: random.Random, n_passes: int) -> list[Document]:
    by_subject: dict[str, list[Fact]] = defaultdict(list)
    kinds: dict[str, str] = {}
    for fact in world.by_domain("science"):
        by_subject[fact.subject].append(fact)
        kinds[fact.subject] = RELATIONS[fact.relation].subject_kind
    docs = []
    for subject, facts in by_subject.items():
        known = [fact for fact in facts if fact.known]
        if not known:
            continue  # pretraining never names an entity it knows nothing about
        for _ in range(n_passes):
            sentences = [statement(fact, rng.randrange(2)) for fact in known]
            rng.shuffle(sentences)
            intro = _INTROS[kinds[subject]].format(s=subject, S=subject.capitalize())
            docs.append(Document("text", text=" ".join([intro, *sentences])))
    return docs


def _grouped_prose(facts: list[Fact], rng: random.Random, n_passes: int, group: int, sep: str) -> list[Document]:
    docs = []
    for _ in range(n_passes):
        order = facts[:]
        rng.shuffle(order)
        for start in range(0, len(order), group):
            chunk = order[start:start + group]
            docs.append(Document("text", text=sep.join(statement(fact, rng.randrange(2)) for fact in chunk)))
    return docs


def _qa_documents(world: World) -> list[Document]:
    docs = []
    for fact in world.facts:
        for template in fact.qa_templates:
            docs.append(Document("qa", prompt=prompt_text(*question(fact, template)), response=answer(fact)))
    return docs


def build_corpus(world: World, n_passes: int = 3) -> list[Document]:
    """Every known fact stated `n_passes` times in varied prose, plus the answered questions; shuffled."""
    rng = random.Random(world.spec.seed + 1)
    known_math = [fact for fact in world.by_domain("math") if fact.known]
    known_code = [fact for fact in world.by_domain("code") if fact.known]
    docs = (
        _science_prose(world, rng, n_passes)
        + _grouped_prose(known_math, rng, n_passes, group=4, sep=" ")
        + _grouped_prose(known_code, rng, n_passes, group=1, sep="\n\n")
        + _qa_documents(world)
    )
    rng.shuffle(docs)
    return docs
