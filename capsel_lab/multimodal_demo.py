"""`capsel demo --multimodal` without Prefect: the drawn pool and a tiny random VLM, staged for the select flow.

The model is a Llava-style VLM with random weights built from a config (capsel_lab.tiny_vlm), so its
scores mean nothing: the demo shows the multimodal path end to end (images ingested, stored by hash,
deduplicated on the question, scored on the text decoder, published with their files), not the science.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from capsel.pipeline_config import PipelineConfig
from capsel.publish.excluded import EXCLUDED_FILE
from capsel_lab.demo import DB_FILE, POOL_DIR, SELECTIONS_DIR, DemoResult, counts_of
from capsel_lab.multimodal_pool import stage_multimodal_pool
from capsel_lab.tiny_vlm import build_tiny_vlm

MODEL_DIR = "model"
NOTE = "the VLM has random weights: its scores mean nothing; the demo shows the path, not the science"


def prepare_multimodal_demo(root: Path, budget: str) -> tuple[PipelineConfig, list[dict]]:
    """Empty `root`, draw the pool and build the tiny VLM into it; returns the flow's config and the rows."""
    if root.exists():
        shutil.rmtree(root)
    files, records = stage_multimodal_pool(root / POOL_DIR)
    model = build_tiny_vlm(root / MODEL_DIR, "llava")
    config = PipelineConfig.model_validate({
        "db_path": str(root / DB_FILE),
        "output_root": str(root),
        "sources": {"paths": [str(path) for path in files]},
        "scoring": {"method": "cap", "batch_size": 8,
                    "model": {"path": str(model), "dtype": "float32", "device": "cpu", "prompt_format": "auto"}},
        "runner": {"shard_size": 16},
        "selection": {"budget": budget, "method": "cap", "out": SELECTIONS_DIR},
        "check_profile": False,  # a random model has no rank profile worth surveying
    })
    return config, records


def multimodal_demo_result(config: PipelineConfig, counters: dict) -> DemoResult:
    """Key numbers of a finished multimodal demo run and where its outputs are."""
    selection_dir = Path(counters["selection"]["path"])
    manifest = json.loads((selection_dir / "manifest.json").read_text(encoding="utf-8"))
    return DemoResult(
        counts=counts_of(counters), junk={},
        paths={"selection": selection_dir, "data": selection_dir / "data.jsonl", "images": selection_dir / "images",
               "gate": selection_dir / "gate" / "index.html", "excluded": selection_dir / EXCLUDED_FILE,
               "db": config.settings().db_path},
        selection_id=counters["selection"]["selection_id"],
        gate_success=bool(manifest["gate"]["success"]),
        prompt_format=manifest["scoring_config"]["config"].get("prompt_format", "raw"),
        notes=[NOTE, *counters.get("notes", [])],
        funnel=manifest["funnel"],
    )
