"""Junk candidates: token salad and character shuffles that carry no word of the pool's lexicon (world or real)."""

from __future__ import annotations

import random
import string

from capsel_lab.world.lexicon import words

_SALAD_CHARS = string.ascii_lowercase + string.digits
_PUNCT = [",", ".", ";", ":", "!", "?", "-", "(", ")", "#", "%", "/"]
MIN_WORLD_WORD = 3  # a shuffle may leave single letters like "a"; longer world words must not survive


def _clean(text: str, lexicon: set[str]) -> bool:
    return not any(len(word) >= MIN_WORLD_WORD and word in lexicon for word in words(text))


def salad(rng: random.Random, n_words: int, lexicon: set[str]) -> str:
    """Random pseudo-words and punctuation, none of them a world word."""
    out: list[str] = []
    while len(out) < n_words:
        if rng.random() < 0.15:
            out.append(rng.choice(_PUNCT))
            continue
        word = "".join(rng.choice(_SALAD_CHARS) for _ in range(rng.randint(2, 8)))
        if _clean(word, lexicon):
            out.append(word)
    return " ".join(out)


def shuffled(rng: random.Random, text: str, lexicon: set[str], max_tries: int = 200) -> str | None:
    """The characters of `text` in random order, or None if every try left a world word intact."""
    chars = list(text)
    for _ in range(max_tries):
        rng.shuffle(chars)
        candidate = "".join(chars).strip()
        if candidate and _clean(candidate, lexicon):
            return candidate
    return None


def junk_records(domain: str, clean: list[dict], count: int, kinds: tuple[str, ...], lexicon: set[str],
                 rng: random.Random, blank: dict[str, str] | None = None) -> list[dict]:
    """`count` junk records for `domain`, kinds taken in turn; `blank` holds the pool's empty provenance fields."""
    records: list[dict] = []
    while len(records) < count:
        kind = kinds[len(records) % len(kinds)]
        record = {"lab_id": f"{domain}-junk-{len(records):04d}", "domain": domain,
                  "lab_label": "junk", **(blank or {}), "lab_detail": kind}
        if kind == "salad":
            record.update(instruction=salad(rng, rng.randint(5, 12), lexicon), input="",
                          output=salad(rng, rng.randint(15, 35), lexicon))
        else:
            source = rng.choice(clean)
            parts = [shuffled(rng, source[key], lexicon) if source[key] else ""
                     for key in ("instruction", "input", "output")]
            instruction, input_text, output = parts
            if instruction is None or input_text is None or output is None:
                continue  # a text no shuffle could break: draw another source record
            record.update(instruction=instruction, input=input_text, output=output,
                          lab_detail=f"shuffled:{source['lab_id']}")
        records.append(record)
    return records
