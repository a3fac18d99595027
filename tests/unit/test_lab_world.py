"""The synthetic world's ground truth, checked against the corpus text itself."""

import re
import unicodedata
from collections import Counter

import pytest

from capsel_lab.world.corpus import build_corpus
from capsel_lab.world.facts import DOMAINS, WorldSpec, build_world
from capsel_lab.world.pools import PoolSpec, build_pool

# written here, not imported: how each science relation is worded, as a reader of the corpus would spot it
KEYWORDS = {
    "melting_point": r"\bmelt(s|ing)?\b", "colour": r"\bcolour\b", "mined_in": r"\b(mined|miners)\b",
    "hardness": r"\bhardness\b", "diet": r"\beats?\b", "legs": r"\blegs\b", "habitat": r"\blives?\b",
    "age": r"\bage\b",
}
SPEC = WorldSpec(seed=7)
POOL = PoolSpec(seed=3, n_known=60, n_learnable=60, junk_fraction=0.1, duplicate_fraction=0.1)


def normalise(text: str) -> str:
    """The paper's dedup normalisation: NFKC, Unicode casefold, whitespace collapse, trim."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text).casefold()).strip()


@pytest.fixture(scope="module")
def lab():
    world = build_world(SPEC)
    corpus = build_corpus(world)
    texts = [doc.text or f"{doc.prompt}\n{doc.response}" for doc in corpus]
    sentences = [s for text in texts for s in re.split(r"(?<=[.?])\s+|\n", text)]
    return world, corpus, texts, sentences, build_pool(world, POOL)


def _facts(world):
    return {fact.fact_id: fact for fact in world.facts}


def _science_mentions(sentences, fact, with_object):
    subject = re.compile(rf"\b{re.escape(fact.subject)}\b", re.I)
    keyword = re.compile(KEYWORDS[fact.relation], re.I)
    obj = re.compile(rf"\b{re.escape(fact.values['o'])}\b", re.I)
    return [s for s in sentences if subject.search(s) and keyword.search(s) and (not with_object or obj.search(s))]


def _in_corpus(fact, texts, sentences):
    """Whether the corpus states `fact` (science: subject + relation word + object in one sentence)."""
    if fact.domain == "science":
        return bool(_science_mentions(sentences, fact, with_object=True))
    if fact.domain == "math":
        a, b, c = fact.values["a"], fact.values["b"], fact.values["c"]
        pattern = re.compile(rf"(?<!\d){a} {fact.relation} {b} (equals|is) {c}(?!\d)")
        return any(pattern.search(text) for text in texts)
    return any(fact.values["code"] in text for text in texts)


def _never_mentioned(fact, texts, sentences):
    """Whether the corpus says nothing about the fact's subject and relation, whatever the value."""
    if fact.domain == "science":
        return not _science_mentions(sentences, fact, with_object=False)
    if fact.domain == "math":
        pattern = re.compile(rf"(?<!\d){fact.values['a']} {fact.relation} {fact.values['b']}(?!\d)")
    else:
        pattern = re.compile(rf"\b{re.escape(fact.subject)}\b")
    return not any(pattern.search(text) for text in texts)


def test_known_candidates_are_stated_in_the_corpus(lab):
    world, _, texts, sentences, pool = lab
    facts = _facts(world)
    known = [r for r in pool.candidates if r["lab_label"] == "known"]
    assert {r["domain"] for r in known} == set(DOMAINS)
    missing = [r["lab_fact_id"] for r in known if not _in_corpus(facts[r["lab_fact_id"]], texts, sentences)]
    assert missing == []


def test_learnable_candidates_never_appear_in_the_corpus(lab):
    world, _, texts, sentences, pool = lab
    facts = _facts(world)
    learnable = [r for r in pool.candidates if r["lab_label"] == "learnable"]
    leaked = [r["lab_fact_id"] for r in learnable if not _never_mentioned(facts[r["lab_fact_id"]], texts, sentences)]
    assert leaked == []
    # the candidate's own answer text is absent too
    assert not any(r["output"] in text for r in learnable for text in texts)


def test_every_world_fact_is_either_stated_or_absent(lab):
    world, _, texts, sentences, _ = lab
    sample = world.facts[::7]
    assert all(_in_corpus(f, texts, sentences) for f in sample if f.known)
    assert all(_never_mentioned(f, texts, sentences) for f in sample if not f.known)


def test_question_format_is_seen_in_pretraining_for_some_known_facts(lab):
    world, corpus, _, _, pool = lab
    qa_pairs = {(doc.prompt, doc.response) for doc in corpus if doc.kind == "qa"}
    assert len(qa_pairs) > 100
    facts = _facts(world)
    for record in pool.candidates:
        prompt = record["instruction"] + (f"\n{record['input']}" if record["input"] else "")
        seen = (prompt, record["output"]) in qa_pairs
        if record["lab_label"] == "learnable":
            assert not seen
        if record["lab_label"] == "known":
            assert seen == (record["lab_detail"] == "qa_seen")
            assert facts[record["lab_fact_id"]].known


def test_junk_carries_no_world_words(lab):
    _, _, texts, _, pool = lab
    clean = [r for r in pool.candidates if r["lab_label"] in ("known", "learnable")]
    lexicon = {w for text in texts for w in re.findall(r"[a-z]+", text.lower())}
    lexicon |= {w for r in clean for f in ("instruction", "input", "output") for w in re.findall(r"[a-z]+", r[f].lower())}
    junk = [r for r in pool.candidates if r["lab_label"] == "junk"]
    assert {r["lab_detail"].split(":")[0] for r in junk} == {"salad", "shuffled"}
    for record in junk:
        words = re.findall(r"[a-z]+", (record["instruction"] + " " + record["input"] + " " + record["output"]).lower())
        assert not [w for w in words if len(w) >= 3 and w in lexicon], record


def test_shuffled_junk_is_a_permutation_of_its_source(lab):
    pool = lab[4]
    by_id = {r["lab_id"]: r for r in pool.candidates}
    shuffled = [r for r in pool.candidates if r["lab_detail"].startswith("shuffled:")]
    assert shuffled
    for record in shuffled:
        source = by_id[record["lab_detail"].split(":", 1)[1]]
        for field in ("instruction", "input", "output"):
            # the shuffle is stripped at the ends, so compare characters other than whitespace
            assert Counter("".join(record[field].split())) == Counter("".join(source[field].split()))
            assert record[field] != source[field] or not source[field]


def test_duplicates_collapse_under_the_papers_normalisation(lab):
    pool = lab[4]
    position = {r["lab_id"]: i for i, r in enumerate(pool.candidates)}
    by_id = {r["lab_id"]: r for r in pool.candidates}
    duplicates = [r for r in pool.candidates if r["lab_label"] == "duplicate"]
    assert len(duplicates) == round(POOL.duplicate_fraction * (POOL.n_known + POOL.n_learnable)) * len(DOMAINS)
    for record in duplicates:
        source = by_id[record["lab_detail"].rsplit(":", 1)[1]]
        assert (record["instruction"], record["input"]) != (source["instruction"], source["input"])
        assert normalise(record["instruction"]) == normalise(source["instruction"])
        assert normalise(record["input"]) == normalise(source["input"])
        assert position[source["lab_id"]] < position[record["lab_id"]]  # first occurrence is the original
    variants = {part for r in duplicates for part in r["lab_detail"].rsplit(":", 1)[0].split("+")}
    assert variants == {"case", "whitespace", "nfkc"}


def test_non_duplicates_have_distinct_keys(lab):
    pool = lab[4]
    keys = [(r["domain"], normalise(r["instruction"]), normalise(r["input"]))
            for r in pool.candidates if r["lab_label"] != "duplicate"]
    assert len(keys) == len(set(keys))


def test_pool_counts_and_heldout(lab):
    pool = lab[4]
    counts = Counter((r["domain"], r["lab_label"]) for r in pool.candidates)
    n_clean = POOL.n_known + POOL.n_learnable
    for domain in DOMAINS:
        assert counts[(domain, "known")] == POOL.n_known
        assert counts[(domain, "learnable")] == POOL.n_learnable
        assert counts[(domain, "junk")] == round(POOL.junk_fraction * n_clean)
    by_fact = {r["lab_fact_id"]: r for r in pool.candidates if r["lab_label"] in ("known", "learnable")}
    assert len(pool.heldout) == len(by_fact)
    for question in pool.heldout:
        candidate = by_fact[question["lab_fact_id"]]
        assert (question["instruction"], question["input"]) != (candidate["instruction"], candidate["input"])
        assert question["answer"] in candidate["output"]
        assert question["lab_label"] == candidate["lab_label"]


def test_same_seed_same_world_other_seed_other_world():
    spec = WorldSpec(seed=11, n_minerals=20, n_creatures=20, n_unseen_entities=5, n_arithmetic=100, n_functions=40)
    pool_spec = PoolSpec(seed=1, n_known=10, n_learnable=10)
    first, second = build_world(spec), build_world(spec)
    assert first.facts == second.facts
    assert build_corpus(first) == build_corpus(second)
    assert build_pool(first, pool_spec).candidates == build_pool(second, pool_spec).candidates
    other = build_world(WorldSpec(**{**spec.__dict__, "seed": 12}))
    assert [f.fact_id for f in other.facts] != [f.fact_id for f in first.facts]
