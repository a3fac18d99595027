"""The world written to disk: corpus, candidate pool and held-out questions as JSONL."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict
from pathlib import Path

import orjson

from capsel_lab.world.corpus import build_corpus
from capsel_lab.world.facts import WorldSpec, build_world
from capsel_lab.world.pools import PoolSpec, build_pool

CORPUS_FILE, POOL_FILE, HELDOUT_FILE, MANIFEST_FILE = "corpus.jsonl", "pool.jsonl", "heldout.jsonl", "world.json"


def write_jsonl(records: list[dict], path: Path) -> Path:
    """One JSON object per line, UTF-8."""
    with open(path, "wb") as handle:
        for record in records:
            handle.write(orjson.dumps(record) + b"\n")
    return path


def write_world(out_dir: Path, world_spec: WorldSpec, pool_spec: PoolSpec, n_passes: int = 3) -> dict:
    """Write corpus.jsonl, pool.jsonl, heldout.jsonl and world.json (specs and counts); returns the counts."""
    world = build_world(world_spec)
    corpus = build_corpus(world, n_passes=n_passes)
    pool = build_pool(world, pool_spec)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl([doc.as_record() for doc in corpus], out_dir / CORPUS_FILE)
    write_jsonl(pool.candidates, out_dir / POOL_FILE)
    write_jsonl(pool.heldout, out_dir / HELDOUT_FILE)
    labels = Counter(f"{record['domain']}/{record['lab_label']}" for record in pool.candidates)
    manifest = {
        "world": asdict(world_spec), "pool": asdict(pool_spec), "n_passes": n_passes,
        "n_documents": len(corpus), "n_candidates": len(pool.candidates), "n_heldout": len(pool.heldout),
        "labels": dict(sorted(labels.items())),
    }
    (out_dir / MANIFEST_FILE).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return manifest
