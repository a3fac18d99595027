"""A lab pool run through capsel itself: written as JSONL, ingested into a fresh DuckDB file, scored."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandas as pd

from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.engine import ScoringEngine
from capsel.config import load_settings
from capsel.db import open_db, run_sql
from capsel.errors import CapselError, OptionError
from capsel.ingest.pipeline import IngestOptions
from capsel.ingest.summary import IngestReport
from capsel.methods.cap import CapSpec
from capsel.methods.cap.scorer import CapScorer
from capsel.methods.spec import ModelSpec
from capsel.models.loading import describe_model, load_model
from capsel.runner.progress import ProgressSink, RunSummary
from capsel.selection.scoring_key import ScoringKey, resolve_scoring_key
from capsel.stages.context import RunContext
from capsel.stages.ingest import IngestRequest
from capsel.stages.pipeline import SELECTION_STEPS, SelectionOutcome, SelectionPlan, run_steps
from capsel.stages.score import ScoreRequest
from capsel_lab.labels import candidate_labels
from capsel_lab.world.export import write_jsonl
from capsel_lab.world.facts import DOMAINS
from capsel_lab.world.pools import PoolSpec

POOL_FILE, DB_FILE = "pool.jsonl", "capsel.duckdb"


@dataclass
class ScoredLabPool:
    """The scored pool: where its DB lives, the key of its scores, and what ingest and scoring counted."""

    db_path: Path
    key: ScoringKey
    ingest: IngestReport
    scoring: RunSummary
    config: ScoringConfig      # as scored: the prompt format resolved for the model


def clean_pool_spec(n_clean: int, junk_share: float, seed: int) -> PoolSpec:
    """A lab pool of `n_clean` candidates over the domains, half known, half learnable, plus junk; no duplicates."""
    per_group = n_clean // (2 * len(DOMAINS))
    if per_group < 1:
        raise CapselError(f"[[n_clean]] {n_clean} is too small: it needs at least {2 * len(DOMAINS)}")
    if junk_share <= 0:
        raise OptionError("[[junk_share]] must be above 0: the lab pool needs junk")
    return PoolSpec(seed=seed, n_known=per_group, n_learnable=per_group, junk_fraction=junk_share,
                    duplicate_fraction=0.0)


def open_fresh_db(path: Path) -> duckdb.DuckDBPyConnection:
    """A new, empty capsel database at `path` (an earlier file and its WAL are removed first)."""
    for stale in (path, path.with_name(path.name + ".wal")):
        stale.unlink(missing_ok=True)
    return open_db(path)


def score_lab_pool(
    con: duckdb.DuckDBPyConnection, records: list[dict], pool_path: Path, model: str | Path,
    batch_size: int = 16, sink: ProgressSink | None = None, config: ScoringConfig = ScoringConfig(),
) -> tuple[ScoringKey, IngestReport, RunSummary, ScoringConfig]:
    """Write `records` to `pool_path`, ingest it into `con` and score it with `model` on the CPU in float32.

    Returns the scores' key, what ingest and scoring counted, and the config as scored (prompt format resolved).
    """
    # the pipeline the flows run, through scoring, with the engine built here (CPU, float32, the lab's config)
    ctx = RunContext(con, load_settings(), sink, run_config={"lab": True, "batch_size": batch_size})
    info = describe_model(str(model), dtype="float32", device="cpu")
    engine = ScoringEngine(load_model(info), config, batch_size)
    spec = CapSpec(model=ModelSpec(path=str(model), dtype="float32", device="cpu", prompt_format=config.prompt_format),
                   batch_size=batch_size, **config.model_dump(exclude={"prompt_format"}))
    plan = SelectionPlan(IngestRequest([str(write_jsonl(records, pool_path))], IngestOptions()),
                         ScoreRequest(spec, scorer=CapScorer.of(engine)))
    outcome = run_steps(SELECTION_STEPS, plan, SelectionOutcome(), ctx)
    assert outcome.ingest is not None and outcome.score is not None
    report, summary = outcome.ingest, outcome.score.scoring
    key = resolve_scoring_key(con, info.fingerprint, engine.config.scoring_hash)
    return key, report, summary, engine.config


def labelled_scores(con: duckdb.DuckDBPyConnection, key: ScoringKey, records: list[dict]) -> pd.DataFrame:
    """Every scored candidate (PPL, CAP, z, exclusion reason) with its ground-truth label."""
    scores = run_sql(con, "scoring/scores_export", {
        "model_fingerprint": key.model_fingerprint, "scoring_hash": key.config_hash, "domain": None,
    }).df()
    labels = candidate_labels(records).drop(columns="domain")
    return scores.merge(labels, on="candidate_id", how="left", validate="one_to_one")


def build_scored_pool(
    out_dir: Path, records: list[dict], model: str | Path, batch_size: int = 16, sink: ProgressSink | None = None,
    config: ScoringConfig = ScoringConfig(),
) -> tuple[ScoredLabPool, pd.DataFrame]:
    """Score `records` in a fresh `out_dir/capsel.duckdb`; returns the pool and its labelled scores."""
    out_dir.mkdir(parents=True, exist_ok=True)
    con = open_fresh_db(out_dir / DB_FILE)
    try:
        key, report, summary, scored = score_lab_pool(con, records, out_dir / POOL_FILE, model, batch_size, sink,
                                                      config)
        scores = labelled_scores(con, key, records)
    finally:
        con.close()
    return ScoredLabPool(out_dir / DB_FILE, key, report, summary, scored), scores
