"""SFT candidate pools with ground-truth labels, and held-out questions for evaluating SFT."""

from __future__ import annotations

import random
from dataclasses import dataclass

from capsel.errors import CapselError
from capsel_lab.world.facts import DOMAINS, Fact, World
from capsel_lab.world.junk import junk_records
from capsel_lab.world.lexicon import world_lexicon
from capsel_lab.world.render import answer, n_questions, question, statement
from capsel_lab.world.variants import near_copy

LABELS = ("known", "learnable", "junk", "duplicate")


@dataclass(frozen=True)
class PoolSpec:
    """How many candidates of each kind every domain's pool gets."""

    seed: int = 0
    n_known: int = 100
    n_learnable: int = 100
    junk_fraction: float = 0.05        # of the clean candidates
    duplicate_fraction: float = 0.05   # of the clean candidates
    junk_kinds: tuple[str, ...] = ("salad", "shuffled")
    prose_share: float = 0.5           # share of clean responses phrased as a corpus statement, not the QA answer


@dataclass
class LabPool:
    """Candidate records (JSONL-ready, in file order) and held-out question records."""

    candidates: list[dict]
    heldout: list[dict]


def _pick(facts: list[Fact], count: int, rng: random.Random, what: str) -> list[Fact]:
    if count > len(facts):
        raise CapselError(f"the world has {len(facts)} {what} facts, fewer than the {count} asked for")
    return rng.sample(facts, count)


def _clean_records(domain: str, facts: list[tuple[Fact, str]], prose_share: float,
                   rng: random.Random) -> tuple[list[dict], list[dict]]:
    records: list[dict] = []
    heldout: list[dict] = []
    for fact, label in facts:
        template = rng.randrange(n_questions(fact))
        instruction, given = question(fact, template)
        output = statement(fact, rng.randrange(2)) if rng.random() < prose_share else answer(fact)
        lab_id = f"{domain}-{len(records):05d}"
        detail = "prose" if output != answer(fact) else ("qa_seen" if template in fact.qa_templates else "")
        records.append({
            "lab_id": lab_id, "domain": domain, "instruction": instruction, "input": given,
            "output": output, "lab_label": label, "lab_fact_id": fact.fact_id,
            # qa_seen: this exact question and answer are a pretraining document
            "lab_detail": detail,
        })
        other = rng.choice([index for index in range(n_questions(fact)) if index != template])
        held_instruction, held_input = question(fact, other)
        heldout.append({
            "lab_id": f"{lab_id}-heldout", "domain": domain, "instruction": held_instruction, "input": held_input,
            "answer": fact.answer_key, "reference": answer(fact), "lab_label": label, "lab_fact_id": fact.fact_id,
        })
    return records, heldout


def _duplicate_records(domain: str, clean: list[dict], count: int, rng: random.Random) -> list[dict]:
    records = []
    for index, source in enumerate(rng.sample(clean, count)):
        instruction, given, variant = near_copy(rng, source["instruction"], source["input"])
        records.append({
            "lab_id": f"{domain}-dup-{index:04d}", "domain": domain, "instruction": instruction, "input": given,
            "output": source["output"], "lab_label": "duplicate", "lab_fact_id": source["lab_fact_id"],
            "lab_detail": f"{variant}:{source['lab_id']}",
        })
    return records


def _file_order(clean_and_junk: list[dict], duplicates: list[dict], rng: random.Random) -> list[dict]:
    # a duplicate always comes after the record it copies: dedup keeps the first occurrence
    order = clean_and_junk[:]
    rng.shuffle(order)
    for duplicate in duplicates:
        source_id = duplicate["lab_detail"].rsplit(":", 1)[1]
        after = next(i for i, record in enumerate(order) if record["lab_id"] == source_id)
        order.insert(rng.randint(after + 1, len(order)), duplicate)
    return order


def build_pool(world: World, spec: PoolSpec = PoolSpec(), domains: tuple[str, ...] = DOMAINS) -> LabPool:
    """Labelled candidates for each domain (known, learnable, junk, duplicate) and held-out questions."""
    rng = random.Random(spec.seed + 2)
    lexicon = world_lexicon(world)
    candidates, heldout = [], []
    for domain in domains:
        facts = world.by_domain(domain)
        known = _pick([f for f in facts if f.known], spec.n_known, rng, f"known {domain}")
        chosen = [(fact, "known") for fact in known]
        chosen += [(fact, "learnable") for fact in
                   _pick([f for f in facts if not f.known], spec.n_learnable, rng, f"learnable {domain}")]
        clean, held = _clean_records(domain, chosen, spec.prose_share, rng)
        junk = junk_records(domain, clean, round(spec.junk_fraction * len(clean)), spec.junk_kinds, lexicon, rng,
                            blank={"lab_fact_id": ""})
        duplicates = _duplicate_records(domain, clean, round(spec.duplicate_fraction * len(clean)), rng)
        candidates += _file_order(clean + junk, duplicates, rng)
        heldout += held
    return LabPool(candidates=candidates, heldout=heldout)
