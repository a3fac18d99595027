"""Facts as text: prose statements, question prompts and reference answers."""

from __future__ import annotations

from capsel_lab.world.facts import Fact
from capsel_lab.world.relations import RELATIONS


def statement(fact: Fact, template: int) -> str:
    """The fact stated in prose with the relation's `template`-th statement form."""
    relation = RELATIONS[fact.relation]
    return relation.statements[template % len(relation.statements)].format(**fact.values)


def question(fact: Fact, template: int) -> tuple[str, str]:
    """(instruction, input) asking for the fact with the relation's `template`-th question form."""
    instruction, given = RELATIONS[fact.relation].questions[template]
    return instruction.format(**fact.values), given.format(**fact.values)


def answer(fact: Fact) -> str:
    """The reference response: the fact stated as a full answer."""
    return RELATIONS[fact.relation].answer.format(**fact.values)


def prompt_text(instruction: str, given: str) -> str:
    """The prompt exactly as CAP scores it: instruction, then a newline and the input if any."""
    prompt = instruction.strip()
    if given.strip():
        prompt += "\n" + given.strip()
    return prompt


def n_questions(fact: Fact) -> int:
    """How many question forms the fact's relation has."""
    return len(RELATIONS[fact.relation].questions)
