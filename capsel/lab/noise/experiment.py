"""Run the noise-rejection experiment: a clean lab pool plus junk, scored by capsel, junk ranks reported."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from capsel.lab.noise.plot import plot_noise
from capsel.lab.noise.stats import junk_table, noise_summary
from capsel.lab.pretrain import world_spec_of
from capsel.lab.scored_pool import ScoredLabPool, build_scored_pool, clean_pool_spec
from capsel.lab.world.facts import build_world
from capsel.lab.world.pools import PoolSpec, build_pool
from capsel.scoring.runner import ProgressSink

SUMMARY_FILE, FIGURE_FILE, SCORES_FILE = "noise.json", "noise.png", "scores.parquet"


@dataclass(frozen=True)
class NoiseSpec:
    """Pool size, junk share and seed of one run."""

    n_clean: int = 600           # split evenly over the three domains, half known and half learnable facts
    junk_share: float = 0.05     # junk candidates per clean candidate, in every domain
    seed: int = 0
    batch_size: int = 16

    def pool_spec(self) -> PoolSpec:
        """The lab pool: known and learnable facts per domain, junk, no duplicates."""
        return clean_pool_spec(self.n_clean, self.junk_share, self.seed)


@dataclass
class NoiseResult:
    """The scored pool, per-candidate scores with labels, the summary and the files written."""

    pool: ScoredLabPool
    scores: pd.DataFrame
    junk: pd.DataFrame
    summary: dict
    files: dict[str, Path]


def run_noise(model: str | Path, spec: NoiseSpec, out_dir: Path, sink: ProgressSink | None = None) -> NoiseResult:
    """Build the pool from the model's own world, score it in a fresh DB under `out_dir`, and report."""
    world = build_world(world_spec_of(model))
    records = build_pool(world, spec.pool_spec()).candidates
    pool, scores = build_scored_pool(out_dir, records, model, spec.batch_size, sink)
    junk = junk_table(scores)
    summary = {
        "model": str(model), "spec": asdict(spec), "pool_spec": asdict(spec.pool_spec()),
        "n_candidates": len(records), "n_scored": int(scores["excluded_reason"].isna().sum()),
        **noise_summary(scores),
        "junk": junk.to_dict(orient="records"),
    }
    files = {
        "summary": out_dir / SUMMARY_FILE,
        "figure": plot_noise(scores, out_dir / FIGURE_FILE, f"{Path(model).name}: {len(junk)} junk among "
                             f"{summary['pooled']['cap']['n_clean']} clean candidates"),
        "scores": out_dir / SCORES_FILE,
        "db": pool.db_path,
    }
    files["summary"].write_text(json.dumps(summary, indent=1), encoding="utf-8")
    scores.drop(columns="layer_divergence").to_parquet(files["scores"], index=False)
    return NoiseResult(pool, scores, junk, summary, files)
