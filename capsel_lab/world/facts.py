"""A seeded synthetic world: entities, their facts, and which facts pretraining will contain."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from capsel_lab.world.names import unique_names
from capsel_lab.world.relations import (
    CODE_BODIES,
    CODE_VERBS,
    COLOURS,
    FOODS,
    MATH,
    RELATIONS,
    SCIENCE,
    Relation,
)

DOMAINS = ("math", "code", "science")


@dataclass(frozen=True)
class WorldSpec:
    """How big the world is and how much of it pretraining sees."""

    seed: int = 0
    n_minerals: int = 80
    n_creatures: int = 80
    n_unseen_entities: int = 20      # per subject kind: entities pretraining never names
    n_regions: int = 30
    n_arithmetic: int = 600
    n_functions: int = 240
    known_fraction: float = 0.5      # share of facts (of seen entities) that pretraining contains
    qa_fraction: float = 0.5         # share of known facts that pretraining also shows as question/answer
    qa_templates_per_fact: int = 2   # how many of a relation's question templates those facts get


@dataclass(frozen=True)
class Fact:
    """One fact of the world; `known` says whether the pretraining corpus contains it."""

    fact_id: str
    domain: str
    relation: str
    subject: str
    values: dict[str, str] = field(hash=False)
    answer_key: str
    known: bool
    qa_templates: tuple[int, ...]    # question templates pretraining shows answered (known facts only)


@dataclass
class World:
    """Every fact plus the lexicon of made-up names the world uses."""

    spec: WorldSpec
    facts: list[Fact]
    names: set[str]

    def by_domain(self, domain: str) -> list[Fact]:
        """Facts of one domain in generation order."""
        return [fact for fact in self.facts if fact.domain == domain]


def _entity_values(relation: Relation, name: str, rng: random.Random, regions: list[str]) -> tuple[dict[str, str], str]:
    objects = {
        "melting_point": lambda: str(rng.randrange(120, 990, 5)),
        "colour": lambda: rng.choice(COLOURS),
        "mined_in": lambda: rng.choice(regions),
        "hardness": lambda: str(rng.randint(1, 10)),
        "diet": lambda: rng.choice(FOODS),
        "legs": lambda: str(rng.choice([2, 4, 6, 8, 10])),
        "habitat": lambda: rng.choice(regions),
        "age": lambda: str(rng.randint(2, 90)),
    }
    obj = objects[relation.name]()
    return {"s": name, "S": name.capitalize(), "o": obj, "O": obj.capitalize()}, obj


def _science_facts(spec: WorldSpec, rng: random.Random, taken: set[str], regions: list[str]) -> list[Fact]:
    facts: list[Fact] = []
    for kind, count in (("mineral", spec.n_minerals), ("creature", spec.n_creatures)):
        relations = [relation for relation in SCIENCE if relation.subject_kind == kind]
        names = unique_names(rng, count + spec.n_unseen_entities, taken)
        for index, name in enumerate(names):
            seen_entity = index < count
            for relation in relations:
                values, obj = _entity_values(relation, name, rng, regions)
                known = seen_entity and rng.random() < spec.known_fraction
                facts.append(_fact("science", relation.name, name, values, obj, known, spec, rng))
    return facts


def _arithmetic(relation: Relation, rng: random.Random) -> tuple[int, int, int]:
    if relation.name == "plus":
        a, b = rng.randint(2, 99), rng.randint(2, 99)
        return a, b, a + b
    if relation.name == "minus":
        a = rng.randint(10, 99)
        b = rng.randint(2, a - 1)
        return a, b, a - b
    a, b = rng.randint(2, 19), rng.randint(2, 12)
    return a, b, a * b


def _math_facts(spec: WorldSpec, rng: random.Random) -> list[Fact]:
    facts: list[Fact] = []
    seen: set[tuple[str, int, int]] = set()
    while len(facts) < spec.n_arithmetic:
        relation = rng.choice(MATH)
        a, b, c = _arithmetic(relation, rng)
        if (relation.name, a, b) in seen:
            continue
        seen.add((relation.name, a, b))
        values = {"a": str(a), "b": str(b), "c": str(c)}
        subject = f"{a} {relation.name} {b}"
        known = rng.random() < spec.known_fraction
        facts.append(_fact("math", relation.name, subject, values, str(c), known, spec, rng))
    return facts


def _code_facts(spec: WorldSpec, rng: random.Random, taken: set[str]) -> list[Fact]:
    modules = unique_names(rng, max(8, spec.n_functions // 4), taken, syllables=(2, 2))
    facts: list[Fact] = []
    used: set[str] = set()
    while len(facts) < spec.n_functions:
        module, verb = rng.choice(modules), rng.choice(CODE_VERBS)
        function = f"{module}_{verb}"
        if function in used:
            continue
        used.add(function)
        params = {"f": function, "a": str(rng.randint(2, 9)), "b": str(rng.randint(1, 9)),
                  "c": rng.choice("aeiou"), "d": rng.choice("xyzqw")}
        code = rng.choice(CODE_BODIES).format(**params)
        answer_key = code.splitlines()[-1].strip()
        values = {"f": function, "mod": module, "code": code}
        known = rng.random() < spec.known_fraction
        facts.append(_fact("code", "function", function, values, answer_key, known, spec, rng))
    return facts


def _fact(domain: str, relation: str, subject: str, values: dict[str, str], answer_key: str,
          known: bool, spec: WorldSpec, rng: random.Random) -> Fact:
    qa_templates: tuple[int, ...] = ()
    if known and rng.random() < spec.qa_fraction:
        n_questions = len(RELATIONS[relation].questions)
        qa_templates = tuple(sorted(rng.sample(range(n_questions), min(spec.qa_templates_per_fact, n_questions))))
    return Fact(f"{domain}:{relation}:{subject}", domain, relation, subject, values, answer_key, known, qa_templates)


def build_world(spec: WorldSpec = WorldSpec()) -> World:
    """Generate the whole world from `spec.seed`; the same spec always gives the same world."""
    rng = random.Random(spec.seed)
    taken: set[str] = set()
    regions = [name.capitalize() for name in unique_names(rng, spec.n_regions, taken)]
    facts = _science_facts(spec, rng, taken, regions) + _math_facts(spec, rng) + _code_facts(spec, rng, taken)
    return World(spec=spec, facts=facts, names=set(taken))
