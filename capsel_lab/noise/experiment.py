"""Run the noise-rejection experiment: a clean pool plus junk, scored by capsel, junk ranks reported.

Two pools: `world`, drawn from the synthetic world a lab model was pretrained on (the demo model),
and `real`, GSM8K and HumanEval rows with the same kinds of junk (`capsel_lab.real_pool`), for real
pretrained models such as `gemma3-270m` and `smollm2-135m-instruct`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import orjson
import pandas as pd

from capsel.cap_engine.config import ScoringConfig
from capsel.runner.progress import ProgressSink
from capsel_lab.labels import candidate_labels
from capsel_lab.noise.plot import plot_noise
from capsel_lab.noise.selections import guarded_ids, junk_in_selections, ppl_key
from capsel_lab.noise.spec import NoiseSpec
from capsel_lab.noise.stats import guard_cost, junk_table, noise_summary
from capsel_lab.scored_pool import ScoredLabPool, build_scored_pool

SUMMARY_FILE, FIGURE_FILE, SCORES_FILE = "noise.json", "noise.png", "scores.parquet"
@dataclass
class NoiseResult:
    """The scored pool, per-candidate scores with labels, the summary and the files written."""

    pool: ScoredLabPool
    scores: pd.DataFrame
    junk: pd.DataFrame
    summary: dict
    files: dict[str, Path]


def run_noise(model: str | Path, spec: NoiseSpec, out_dir: Path, sink: ProgressSink | None = None) -> NoiseResult:
    """Build the pool, score it in a fresh DB under `out_dir`, compare the methods' selections, and report."""
    records = spec.records(model)
    config = ScoringConfig(prompt_format=spec.prompt_format)
    pool, scores = build_scored_pool(out_dir, records, model, spec.batch_size, sink, config)
    selections = _selections(pool, records, model, spec)
    guarded = scores["candidate_id"].isin(selections.pop("guarded"))
    scores["z_guard"] = scores["z"].where(~guarded, -np.inf)
    junk = junk_table(scores)
    summary = {
        "model": str(model), "spec": asdict(spec), "prompt_format": pool.config.prompt_format,
        "n_candidates": len(records), "n_scored": int(scores["excluded_reason"].isna().sum()),
        "scoring": pool.scoring.counters(), "notes": pool.scoring.notes,
        **noise_summary(scores),
        "selections": selections,
        "guard": guard_cost(scores, guarded, spec.ppl_guard),
        "junk": junk.to_dict(orient="records"),
    }
    files = {
        "summary": out_dir / SUMMARY_FILE,
        "figure": plot_noise(scores, out_dir / FIGURE_FILE, f"{Path(str(model)).name}, seed {spec.seed}: "
                             f"{len(junk)} junk among {summary['pooled']['cap']['n_clean']} clean candidates"),
        "scores": out_dir / SCORES_FILE,
        "db": pool.db_path,
    }
    # orjson writes NaN and inf as null: the file stays valid JSON
    files["summary"].write_bytes(orjson.dumps(summary, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY))
    scores.drop(columns="layer_divergence").to_parquet(files["scores"], index=False)
    return NoiseResult(pool, scores, junk, summary, files)


def _selections(pool: ScoredLabPool, records: list[dict], model: str | Path, spec: NoiseSpec) -> dict:
    from capsel.db import open_db
    from capsel.models.loading import describe_model

    labels = candidate_labels(records).drop(columns="domain")
    con = open_db(pool.db_path)
    try:
        info = describe_model(str(model), dtype="float32", device="cpu")
        ppl = ppl_key(con, info, pool.config, spec.batch_size)
        selections = junk_in_selections(con, pool.key, ppl, labels, spec.budget, spec.ppl_guard, spec.seed)
        selections["guarded"] = guarded_ids(con, pool.key, spec.ppl_guard)
    finally:
        con.close()
    return selections
