"""The world's relations: how each kind of fact is stated in prose and asked as a question.

Every statement and question of a relation contains its subject and its keyword, so the
pretraining corpus can be checked for which facts it mentions.
"""

from __future__ import annotations

from dataclasses import dataclass

COLOURS = ["red", "blue", "green", "yellow", "violet", "orange", "grey", "white", "black", "amber", "teal", "crimson"]
FOODS = ["moss", "seeds", "fish", "insects", "roots", "fruit", "leaves", "worms", "algae", "mushrooms", "berries",
         "bark"]


@dataclass(frozen=True)
class Relation:
    """One kind of fact: prose templates, question templates (instruction, input) and the answer."""

    name: str
    domain: str
    subject_kind: str
    statements: tuple[str, ...]
    questions: tuple[tuple[str, str], ...]
    answer: str


SCIENCE = (
    Relation(
        "melting_point", "science", "mineral",
        ("{S} melts at {o} degrees.", "The melting point of {s} is {o} degrees."),
        (("What is the melting point of {s}?", ""), ("At what temperature does {s} melt?", ""),
         ("Give the melting point of this mineral.", "{S}")),
        "The melting point of {s} is {o} degrees.",
    ),
    Relation(
        "colour", "science", "mineral",
        ("The colour of {s} is {o}.", "{S} has a {o} colour."),
        (("What colour is {s}?", ""), ("Which colour does {s} have?", ""),
         ("Name the colour of this mineral.", "{S}")),
        "The colour of {s} is {o}.",
    ),
    Relation(
        "mined_in", "science", "mineral",
        ("{S} is mined in {O}.", "Miners dig {s} out of the ground in {O}."),
        (("Where is {s} mined?", ""), ("In which region do miners dig {s}?", ""),
         ("Say where this mineral is mined.", "{S}")),
        "{S} is mined in {O}.",
    ),
    Relation(
        "hardness", "science", "mineral",
        ("The hardness of {s} is {o}.", "{S} has a hardness of {o}."),
        (("What is the hardness of {s}?", ""), ("How large is the hardness of {s}?", ""),
         ("Give the hardness of this mineral.", "{S}")),
        "{S} has a hardness of {o}.",
    ),
    Relation(
        "diet", "science", "creature",
        ("The {s} eats {o}.", "Every {s} eats {o} each day."),
        (("What does the {s} eat?", ""), ("Which food does the {s} eat?", ""),
         ("Say what this creature eats.", "{s}")),
        "The {s} eats {o}.",
    ),
    Relation(
        "legs", "science", "creature",
        ("The {s} has {o} legs.", "A {s} walks on {o} legs."),
        (("How many legs does the {s} have?", ""), ("On how many legs does a {s} walk?", ""),
         ("Count the legs of this creature.", "{s}")),
        "The {s} has {o} legs.",
    ),
    Relation(
        "habitat", "science", "creature",
        ("The {s} lives in {O}.", "In {O} you can find the {s}, which lives there."),
        (("Where does the {s} live?", ""), ("In which region does the {s} live?", ""),
         ("Say where this creature lives.", "{s}")),
        "The {s} lives in {O}.",
    ),
    Relation(
        "age", "science", "creature",
        ("The {s} can reach an age of {o} years.", "A {s} reaches an age of {o} years at most."),
        (("What age can the {s} reach?", ""), ("What is the highest age of a {s}?", ""),
         ("Give the highest age of this creature.", "{s}")),
        "The {s} can reach an age of {o} years.",
    ),
)

MATH = tuple(
    Relation(
        op, "math", "sum",
        ("{a} " + op + " {b} equals {c}.", "We know that {a} " + op + " {b} is {c}."),
        (("What is {a} " + op + " {b}?", ""), ("Compute {a} " + op + " {b}.", ""),
         ("Solve this arithmetic problem.", "{a} " + op + " {b}")),
        "{a} " + op + " {b} equals {c}, so the answer is {c}.",
    )
    for op in ("plus", "minus", "times")
)

CODE = (
    Relation(
        "function", "code", "function",
        ("The {mod} library defines {f} as follows.\n{code}", "# {mod} library\n{code}"),
        (("Write the function {f} from the {mod} library.", ""), ("Show the source code of {f}.", ""),
         ("Implement this function of the {mod} library.", "{f}")),
        "{code}",
    ),
)

CODE_BODIES = (
    "def {f}(x):\n    return x * {a} + {b}",
    "def {f}(items):\n    return [v for v in items if v > {a}]",
    "def {f}(n):\n    total = 0\n    for i in range(n):\n        total += i * {a}\n    return total",
    "def {f}(x, y):\n    return x * {a} - y * {b}",
    "def {f}(text):\n    return text.replace(\"{c}\", \"{d}\")",
    "def {f}(items):\n    return sum(items) % {a}",
)

CODE_VERBS = ("scale", "shift", "filter", "count", "merge", "clip", "pick", "blend", "fold", "sweep", "trim", "pack")

RELATIONS = {relation.name: relation for relation in SCIENCE + MATH + CODE}
