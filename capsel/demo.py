"""`capsel demo` without Prefect: stage the bundled lab pool, configure the selection flow, read its results.

The CLI runs `flows.select_flow` between `prepare_demo` and `demo_result`; the flow is the only
part that needs Prefect, so everything the demo measures is computed here from the flow's DB
and published files.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from capsel.db import open_db, run_sql
from capsel.lab.demo_pool import demo_pool_dir, stage_demo_pool
from capsel.lab.labels import candidate_labels
from capsel.lab.noise.stats import CLEAN_LABELS, junk_ranks
from capsel.models import demo_model_path
from capsel.pipeline_config import PipelineConfig

DB_FILE, POOL_DIR, SELECTIONS_DIR, PROFILE_DIR = "capsel.duckdb", "pool", "selections", "profile"


@dataclass(frozen=True)
class DemoOptions:
    """Where the demo writes (`root`, emptied first) and how much of the bundled pool it takes."""

    root: Path
    per_domain: int | None = None    # first rows of each domain only (a quick run); None: the whole pool
    budget: str = "10%"
    batch_size: int = 16
    shard_size: int = 256
    model: Path = field(default_factory=demo_model_path)
    pool_dir: Path = field(default_factory=demo_pool_dir)


@dataclass
class DemoResult:
    """The run's key numbers and where its outputs are."""

    counts: dict
    junk: dict
    paths: dict[str, Path]
    selection_id: str
    gate_success: bool


def prepare_demo(options: DemoOptions) -> tuple[PipelineConfig, list[dict]]:
    """Empty `root`, stage the pool into it; returns the flow's config and the staged lab records."""
    if options.root.exists():
        shutil.rmtree(options.root)
    files, records = stage_demo_pool(options.pool_dir, options.root / POOL_DIR, options.per_domain)
    config = PipelineConfig.model_validate({
        "db_path": str(options.root / DB_FILE),
        "output_root": str(options.root),
        "sources": {"paths": [str(path) for path in files]},
        "scoring": {"model": {"path": str(options.model), "dtype": "float32", "device": "cpu"},
                    "batch_size": options.batch_size, "shard_size": options.shard_size},
        "selection": {"budget": options.budget, "method": "cap", "out": SELECTIONS_DIR},
        "check_profile": False,  # the demo surveys the model itself and keeps the plot
    })
    return config, records


def demo_result(config: PipelineConfig, counters: dict, records: list[dict]) -> DemoResult:
    """Key numbers of a finished demo flow run, and where the junk of the pool ended up."""
    selection_dir = Path(counters["selection"]["path"])
    manifest = json.loads((selection_dir / "manifest.json").read_text(encoding="utf-8"))
    members = pd.read_parquet(selection_dir / "data.parquet", columns=["candidate_id"])
    con = open_db(config.settings().db_path, read_only=True)
    try:
        scores = run_sql(con, "scores_export", {
            "model_fingerprint": manifest["model"]["fingerprint"],
            "scoring_hash": manifest["scoring_config"]["config_hash"], "domain": None,
        }).df()
    finally:
        con.close()
    labels = candidate_labels(records).drop(columns="domain")
    scores = scores.merge(labels, on="candidate_id", how="left", validate="one_to_one")
    scores["selected"] = scores["candidate_id"].isin(members["candidate_id"])
    ingest = counters["ingest"]["domains"].values()
    score = counters["score"]
    counts = {
        "rows_read": sum(d["n_read"] for d in ingest),
        "inserted": sum(d["n_inserted"] for d in ingest),
        "duplicates": sum(d["n_duplicates"] for d in ingest),
        "quarantined": sum(d["n_quarantined"] for d in ingest),
        "scored": int(score["n_done"]),
        "excluded": int(sum(score["n_excluded"].values())),
        "excluded_by_reason": dict(score["n_excluded"]),
        "selected": int(counters["selection"]["n_members"]),
    }
    return DemoResult(
        counts=counts, junk=junk_outcome(scores),
        paths={
            "selection": selection_dir, "data": selection_dir / "data.jsonl",
            "report": selection_dir / "report" / "index.html", "gate": selection_dir / "gate" / "index.html",
            "db": config.settings().db_path,
        },
        selection_id=counters["selection"]["selection_id"],
        gate_success=bool(manifest["gate"]["success"]),
    )


def junk_outcome(scores: pd.DataFrame) -> dict:
    """Junk candidates: how many were scored, excluded by the engine, selected; their CAP z percentile among clean."""
    junk = scores[scores["lab_label"] == "junk"]
    eligible = scores[scores["excluded_reason"].isna()]
    clean_z = eligible.loc[eligible["lab_label"].isin(CLEAN_LABELS), "z"].to_numpy()
    junk_z = eligible.loc[eligible["lab_label"] == "junk", "z"].to_numpy()
    ranks = junk_ranks("cap", clean_z, junk_z)
    return {
        "n": int(len(junk)),
        "excluded": int(junk["excluded_reason"].notna().sum()),
        "selected": int(junk["selected"].sum()),
        "selected_clean": int(scores.loc[scores["lab_label"].isin(CLEAN_LABELS), "selected"].sum()),
        "median_pct": None if np.isnan(ranks.median) else ranks.median,
        "below_p10": None if np.isnan(ranks.below_p10) else ranks.below_p10,
    }

