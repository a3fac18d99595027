"""The bundled demo pool: a lab pool from the demo model's world, with junk, duplicates and malformed rows.

It ships in `capsel/data/lab_pool/` (inspectable, and ingested as a real file like any user's pool);
`write_demo_pool` regenerates it byte for byte from the world seed (a test checks that).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict
from importlib.resources import files
from pathlib import Path

import orjson

from capsel_lab.world.export import write_jsonl
from capsel_lab.world.facts import WorldSpec, build_world
from capsel_lab.world.pools import PoolSpec, build_pool

POOL_FILE, MALFORMED_FILE, MANIFEST_FILE = "pool.jsonl", "malformed.jsonl", "manifest.json"
# 110 known + 110 learnable facts per domain: the world has 117 unseen code facts, the smallest group
DEMO_POOL_SPEC = PoolSpec(seed=0, n_known=110, n_learnable=110, junk_fraction=0.05, duplicate_fraction=0.05)
# One line per quarantine reason a JSONL file can show: every bad row is kept with its reason, never dropped.
MALFORMED_LINES = (
    '{"instruction": "", "output": "an answer to no question", "domain": "math"}',
    '{"instruction": "What is 12 plus 30?", "domain": "math"}',
    '{"instruction": "What is 12 minus 3?", "output": "   ", "domain": "math"}',
    '{"instruction": 42, "output": "the answer is a number, the question too", "domain": "code"}',
    '{"instruction": "Where is the mineral found?", "output": "somewhere"}',
    '["a list", "not a record"]',
    '{"instruction": "What does the creature eat?", "output": "a line cut',
)
REGENERATE = "capsel lab demo-pool --out DIR"


def demo_pool_dir() -> Path:
    """Folder of the bundled demo pool."""
    return Path(str(files("capsel.data").joinpath("lab_pool")))


def write_demo_pool(out_dir: Path, world_spec: WorldSpec, spec: PoolSpec = DEMO_POOL_SPEC) -> dict:
    """Write pool.jsonl (labelled lab pool), malformed.jsonl and manifest.json; returns the manifest."""
    pool = build_pool(build_world(world_spec), spec)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl(pool.candidates, out_dir / POOL_FILE)
    (out_dir / MALFORMED_FILE).write_text("\n".join(MALFORMED_LINES) + "\n", encoding="utf-8")
    labels = Counter(f"{record['domain']}/{record['lab_label']}" for record in pool.candidates)
    manifest = {
        "world": asdict(world_spec), "pool": asdict(spec), "regenerate": REGENERATE,
        "n_candidates": len(pool.candidates), "n_malformed": len(MALFORMED_LINES),
        "labels": dict(sorted(labels.items())),
    }
    (out_dir / MANIFEST_FILE).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def read_pool(path: Path) -> list[dict]:
    """The records of a lab pool JSONL file."""
    with open(path, "rb") as handle:
        return [orjson.loads(line) for line in handle if line.strip()]


def stage_demo_pool(source: Path, dest: Path, per_domain: int | None = None) -> tuple[list[Path], list[dict]]:
    """Copy the demo pool into `dest`; with `per_domain`, only the first such rows of each domain.

    A cut pool keeps the near-duplicates of the rows it keeps (they lie late in the file), so a
    quick run still shows dedup. Returns the files to ingest and the lab records staged.
    """
    records = read_pool(source / POOL_FILE)
    if per_domain is not None:
        records = _first_rows(records, per_domain)
    dest.mkdir(parents=True, exist_ok=True)
    pool = write_jsonl(records, dest / POOL_FILE)
    malformed = dest / MALFORMED_FILE
    malformed.write_bytes((source / MALFORMED_FILE).read_bytes())
    return [pool, malformed], records


def _first_rows(records: list[dict], per_domain: int) -> list[dict]:
    taken: Counter = Counter()
    kept_ids, kept = set(), []
    for record in records:
        if record["lab_label"] == "duplicate":
            # lab_detail is "<variant>:<lab_id of the original>"
            if record["lab_detail"].rsplit(":", 1)[1] in kept_ids:
                kept.append(record)
        elif taken[record["domain"]] < per_domain:
            taken[record["domain"]] += 1
            kept_ids.add(record["lab_id"])
            kept.append(record)
    return kept
