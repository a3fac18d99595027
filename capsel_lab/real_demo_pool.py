"""The demo's cut of the bundled real pool: clean rows per domain, 5% junk of both kinds, near-duplicates, bad rows.

The real pool (`capsel/data/real_pool`) holds GSM8K and HumanEval rows with token-salad and
shuffled-character junk. The demo takes the first rows of each domain in file order, keeps the
junk share and both junk kinds, and adds what a real pool also has: a few near-duplicates (which
ingest must fold into the rows they repeat) and the malformed lines of the lab demo pool (which
ingest must quarantine). A near-duplicate is written after the row it repeats, as dedup keeps the
first occurrence.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from pathlib import Path

from capsel_lab.demo_pool import MALFORMED_FILE, MALFORMED_LINES, POOL_FILE, read_pool
from capsel_lab.world.export import write_jsonl
from capsel_lab.world.variants import near_copy

DUPLICATE_SHARE = 0.03   # near-duplicates per clean row taken


def demo_records(records: list[dict], per_domain: int, junk_share: float = 0.05, seed: int = 0) -> list[dict]:
    """Per domain: the first `per_domain` clean rows, round(junk_share x per_domain) junk alternating the kinds
    (the first of each kind in file order, rounded half up) and near-duplicates of a few taken rows, in file order."""
    clean: defaultdict[str, list[dict]] = defaultdict(list)
    junk: defaultdict[str, defaultdict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for record in records:
        domain = record["domain"]
        if record["lab_label"] == "junk":
            junk[domain][record["lab_detail"].split(":")[0]].append(record)
        elif len(clean[domain]) < per_domain:
            clean[domain].append(record)
    taken = {id(record) for rows in clean.values() for record in rows}
    turn = 0  # the kinds take turns across domains too, so a small cut still shows both
    for domain, rows in clean.items():
        kinds = sorted(junk[domain])
        for _ in range(math.floor(junk_share * len(rows) + 0.5)):  # half up, as budgets round
            queue = junk[domain][kinds[turn % len(kinds)]] if kinds else []
            if queue:
                taken.add(id(queue.pop(0)))
                turn += 1
    kept = [record for record in records if id(record) in taken]
    return _with_duplicates(kept, clean, random.Random(seed))


def _with_duplicates(kept: list[dict], clean: dict[str, list[dict]], rng: random.Random) -> list[dict]:
    # at least one per domain, so even a quick run shows dedup at work
    sources = {id(record) for rows in clean.values()
               for record in rng.sample(rows, min(len(rows), max(1, round(DUPLICATE_SHARE * len(rows)))))}
    out = []
    for record in kept:
        out.append(record)
        if id(record) in sources:
            instruction, given, variant = near_copy(rng, record["instruction"], record["input"])
            out.append({**record, "lab_id": f"{record['lab_id']}-dup", "instruction": instruction, "input": given,
                        "lab_label": "duplicate", "lab_detail": f"{variant}:{record['lab_id']}"})
    return out


def stage_real_demo_pool(pool_dir: Path, dest: Path, per_domain: int) -> tuple[list[Path], list[dict]]:
    """Write the demo's cut of the real pool and the malformed lines into `dest`; returns the files and records."""
    records = demo_records(read_pool(pool_dir / POOL_FILE), per_domain)
    dest.mkdir(parents=True, exist_ok=True)
    pool = write_jsonl(records, dest / POOL_FILE)
    malformed = dest / MALFORMED_FILE
    malformed.write_text("\n".join(MALFORMED_LINES) + "\n", encoding="utf-8")
    return [pool, malformed], records
