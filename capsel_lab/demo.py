"""`capsel demo` without Prefect: stage a bundled pool, configure the selection flow, read its results.

The CLI runs `flows.select_flow` between `prepare_demo` and `demo_result`; the flow is the only
part that needs Prefect, so everything the demo measures is computed here from the flow's DB
and published files. On a real model (default `gemma3-270m`, the paper's setting: a base
checkpoint, raw prompts) the pool is a cut of the bundled real pool (GSM8K, HumanEval, 5% junk);
`--model demo` runs the 2.6M-parameter lab model on its synthetic world instead.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from capsel.cap_engine.config import ScoringConfig
from capsel.models import demo_model_path
from capsel.pipeline_config import PipelineConfig
from capsel_lab.demo_pool import demo_pool_dir, stage_demo_pool
from capsel_lab.labels import candidate_labels
from capsel_lab.real_demo_pool import stage_real_demo_pool
from capsel_lab.real_pool import real_pool_dir

DB_FILE, POOL_DIR, SELECTIONS_DIR, PROFILE_DIR = "capsel.duckdb", "pool", "selections", "profile"
TOY_MODEL, DEFAULT_MODEL = "demo", "gemma3-270m"


@dataclass(frozen=True)
class DemoPace:
    """What each step of `capsel demo --model M` took on the reference machine: seconds, and the scoring rate."""

    survey_s: float      # the rank survey (model load and its texts)
    start_s: float       # the flow before scoring: Prefect's server, ingest, the scoring model's load
    rate: float          # candidates/s the flow scored at
    compare_s: float     # after the flow: PPL from CAP's stored values and the compared selections

    def seconds(self, n_candidates: int, survey: bool = True) -> float:
        """The whole demo for `n_candidates`, every step counted."""
        return (self.survey_s if survey else 0.0) + self.start_s + n_candidates / self.rate + self.compare_s


# Measured on the reference machine with `capsel demo --json --model M` (its `steps_s` and the flow's rate; the
# flow's start is its time less the scoring at that rate): an idle 2-core x86-64 VM, float32, batch 32. They
# are what the demo announces; a user's machine may differ, and the demo says how long each step took there.
REFERENCE_MACHINE = "an idle 2-core VM (2026-11-27)"
MEASURED_PACE = {
    "gemma3-270m": DemoPace(survey_s=22.0, start_s=24.0, rate=1.22, compare_s=4.0),
    "smollm2-135m-instruct": DemoPace(survey_s=17.5, start_s=16.0, rate=1.77, compare_s=1.0),
    TOY_MODEL: DemoPace(survey_s=3.6, start_s=15.5, rate=52.0, compare_s=1.0),
}
# Clean rows per domain the real demo takes by default: about 2.5 minutes of scoring at the rates measured when
# the demo was sized (0.7 and 1.5 candidates/s); another model gets Gemma's share
DEFAULT_PER_DOMAIN = {"gemma3-270m": 50, "smollm2-135m-instruct": 107}


@dataclass(frozen=True)
class DemoOptions:
    """Where the demo writes (`root`, emptied first), the model, and how much of the bundled pool it takes."""

    root: Path
    model: str = DEFAULT_MODEL
    per_domain: int | None = None    # clean rows per domain (lab pool: first rows per domain); None: the default
    budget: str = "10%"
    batch_size: int = 32
    shard_size: int = 32        # one merged shard per batch: the flow logs progress every ~30 s
    prompt_format: str = "auto"
    ppl_guard: float = 95.0

    @property
    def toy(self) -> bool:
        """True for the bundled lab model on its synthetic world."""
        return self.model == TOY_MODEL

    @property
    def model_source(self) -> str:
        """The model folder, installed name or hub id the flow scores with."""
        return str(demo_model_path()) if self.toy else self.model

    def real_pool_size(self) -> int:
        """Clean rows per domain the real demo takes: asked for, or the model's default share."""
        if self.per_domain is not None:
            return self.per_domain
        return DEFAULT_PER_DOMAIN.get(Path(self.model).name, DEFAULT_PER_DOMAIN[DEFAULT_MODEL])

    def pace(self) -> DemoPace | None:
        """The reference machine's pace for this model, when it was measured."""
        return MEASURED_PACE.get(TOY_MODEL if self.toy else Path(self.model).name)


@dataclass
class DemoResult:
    """The run's key numbers, where the junk went under each method, and where its outputs are."""

    counts: dict
    junk: dict
    paths: dict[str, Path]
    selection_id: str
    gate_success: bool
    prompt_format: str = ""
    notes: list[str] = field(default_factory=list)
    # rows read down to members, as the manifest records it; every dropped row is in excluded.parquet
    funnel: list[dict] = field(default_factory=list)


def prepare_demo(options: DemoOptions) -> tuple[PipelineConfig, list[dict]]:
    """Empty `root`, stage the pool into it; returns the flow's config and the staged lab records."""
    if options.root.exists():
        shutil.rmtree(options.root)
    if options.toy:
        files, records = stage_demo_pool(demo_pool_dir(), options.root / POOL_DIR, options.per_domain)
    else:
        files, records = stage_real_demo_pool(real_pool_dir(), options.root / POOL_DIR, options.real_pool_size())
    config = PipelineConfig.model_validate({
        "db_path": str(options.root / DB_FILE),
        "output_root": str(options.root),
        "sources": {"paths": [str(path) for path in files]},
        "scoring": {"method": "cap", "batch_size": options.batch_size,
                    "model": {"path": options.model_source, "dtype": "float32", "device": "cpu",
                              "prompt_format": options.prompt_format}},
        "runner": {"shard_size": options.shard_size},
        "selection": {"budget": options.budget, "method": "cap", "out": SELECTIONS_DIR},
        "check_profile": False,  # the demo surveys the model itself and keeps the plot
    })
    return config, records


def demo_result(config: PipelineConfig, counters: dict, records: list[dict], options: DemoOptions) -> DemoResult:
    """Key numbers of a finished demo flow run, and where each kind of junk went under CAP, PPL and the guard."""
    from capsel.db import open_db, run_sql
    from capsel.models.loading import describe_model
    from capsel.publish.excluded import EXCLUDED_FILE
    from capsel.selection.scoring_key import resolve_scoring_key
    from capsel_lab.noise.selections import junk_in_selections, ppl_key
    from capsel_lab.noise.stats import noise_summary

    selection_dir = Path(counters["selection"]["path"])
    manifest = json.loads((selection_dir / "manifest.json").read_text(encoding="utf-8"))
    labels = candidate_labels(records).drop(columns="domain")
    key_hashes = manifest["model"]["fingerprint"], manifest["scoring_config"]["config_hash"]
    con = open_db(config.settings().db_path)
    try:
        scores = run_sql(con, "scoring/scores_export", {
            "model_fingerprint": key_hashes[0], "scoring_hash": key_hashes[1], "domain": None,
        }).df().merge(labels, on="candidate_id", how="left", validate="one_to_one")
        scored_config = ScoringConfig.model_validate(
            {name: value for name, value in manifest["scoring_config"]["config"].items()
             if name in ScoringConfig.model_fields} | {"prompt_format": _prompt_format(manifest)})
        info = describe_model(options.model_source, dtype="float32", device="cpu")
        cap = resolve_scoring_key(con, *key_hashes)
        selections = junk_in_selections(con, cap, ppl_key(con, info, scored_config, options.batch_size), labels,
                                        options.budget, options.ppl_guard)
    finally:
        con.close()
    summary = noise_summary(scores)
    return DemoResult(
        counts=counts_of(counters), junk={"ranks": {"all junk": summary["pooled"], **summary["per_junk_kind"]},
                                        "selections": selections, "n": int((scores["lab_label"] == "junk").sum()),
                                        "excluded_by_label": summary["excluded"]},
        paths={
            "selection": selection_dir, "data": selection_dir / "data.jsonl",
            "report": selection_dir / "report" / "index.html", "gate": selection_dir / "gate" / "index.html",
            "excluded": selection_dir / EXCLUDED_FILE,
            "db": config.settings().db_path,
        },
        selection_id=counters["selection"]["selection_id"],
        gate_success=bool(manifest["gate"]["success"]),
        prompt_format=scored_config.prompt_format,
        notes=list(counters.get("notes", [])),
        funnel=manifest["funnel"],
    )


def _prompt_format(manifest: dict) -> str:
    # raw configs store no prompt_format (their keys predate it)
    return manifest["scoring_config"]["config"].get("prompt_format", "raw")


def counts_of(counters: dict) -> dict:
    """The flow counters the demo reports: rows read, inserted, dropped, scored, selected, and the scoring rate."""
    ingest = counters["ingest"]["domains"].values()
    score = counters["score"]
    return {
        "rows_read": sum(d["n_read"] for d in ingest),
        "inserted": sum(d["n_inserted"] for d in ingest),
        "duplicates": sum(d["n_duplicates"] for d in ingest),
        "quarantined": sum(d["n_quarantined"] for d in ingest),
        "scored": int(score["n_done"]),
        "excluded": int(sum(score["n_excluded"].values())),
        "excluded_by_reason": dict(score["n_excluded"]),
        "selected": int(counters["selection"]["n_members"]),
        "scoring_s": float(score["wall_s"]),
        "candidates_per_s": float(score["candidates_per_s"]),
    }

