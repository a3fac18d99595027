"""Source files and a tiny model for flow tests: JSONL pools in the tiny vocabulary, and a PipelineConfig."""

from __future__ import annotations

import json
import random
from pathlib import Path

from capsel.pipeline_config import PipelineConfig
from tests.fixtures.tiny_models import WORDS, build_model, build_tokenizer, save_model_dir

HORIZON = 12


def write_pool_file(path: Path, n_per_domain: int, seed: int, domains: tuple[str, ...] = ("code", "math")) -> Path:
    """A JSONL file of distinct candidates per domain (plus one duplicate and one bad line to quarantine)."""
    rng = random.Random(seed)
    lines = []
    for domain in domains:
        for index in range(n_per_domain):
            instruction = f"{domain} s{seed} q{index} " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 20)))
            response = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 16)))
            lines.append({"instruction": instruction, "input": "", "response": response, "domain": domain})
    lines.append(dict(lines[0], response="a duplicate of the first row"))
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(json.dumps(line) for line in lines) + "\n" + '{"instruction": "broken\n'
    path.write_text(text)
    return path


def tiny_flow_model(path: Path) -> Path:
    """A saved 4-layer llama with the word-level tokenizer."""
    return save_model_dir(path, build_model("llama", seed=3), build_tokenizer())


def flow_config(tmp_path: Path, model: Path, paths: list[str], **overrides) -> PipelineConfig:
    """A pipeline config on `tmp_path` (db and output root), small shards, budget 5 per domain."""
    body = {
        "db_path": str(tmp_path / "capsel.duckdb"),
        "output_root": str(tmp_path / "out"),
        "sources": {"paths": paths},
        "scoring": {"method": "cap", "model": {"path": str(model), "dtype": "float32", "device": "cpu"},
                    "horizon": HORIZON, "batch_size": 8},
        "runner": {"shard_size": 8},
        "selection": {"budget": "5", "out": "selections"},
    }
    for section, values in overrides.items():
        if section == "scoring" and values.get("method", "cap") != "cap":
            body[section] = values  # another method's spec: CAP's fields do not apply
        else:
            body[section] = {**body.get(section, {}), **values} if isinstance(values, dict) else values
    return PipelineConfig.model_validate(body)
