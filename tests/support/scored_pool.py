"""Fill the ingest and engine tables of a real DuckDB store with a numpy-generated scored pool."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from capsel.cap_engine.config import layer_split
from capsel.db import open_db

MODEL = "fp-model-a"
CONFIG = "cfg-aaaa"
INGEST_RUN = "ingest-run"
SCORE_RUN = "score-run"


@dataclass
class PoolTables:
    """What was written, so tests can compute the expected answer independently."""

    candidates: pd.DataFrame
    divergences: pd.DataFrame
    sources: pd.DataFrame


def make_pool(
    con: duckdb.DuckDBPyConnection,
    sizes: dict[str, int],
    seed: int = 0,
    model: str = MODEL,
    config: str = CONFIG,
    n_excluded: int = 0,
    with_candidates: bool = True,
    fixed: dict[str, tuple[list[float], list[float]]] | None = None,
    n_layers: int | None = None,
) -> PoolTables:
    """Candidates in `sizes` domains, each scored by (model, config) with d_late ≈ a + b·d_early + noise.

    The first `n_excluded` candidates of every domain get an exclusion reason (and no divergences).
    `fixed` gives (d_early, d_late) for a domain instead (its size is then their length).
    `n_layers` stores a per-layer profile D_1..D_L too, with d_early and d_late its means over the default
    split's blocks, as scoring computes them (else no profile is stored).
    """
    fixed = fixed or {}
    sizes = {**sizes, **{domain: len(values[0]) for domain, values in fixed.items()}}
    rng = np.random.default_rng(seed)
    frames, scores = [], []
    for index, (domain, size) in enumerate(sorted(sizes.items())):
        ids = [f"{domain}-{i:05d}" for i in range(size)]
        frames.append(pd.DataFrame({
            "candidate_id": ids,
            "domain": domain,
            "instruction": [f"Question {i} of {domain}?" for i in range(size)],
            "input": ["" if i % 3 else f"context {i}" for i in range(size)],
            "response": [f"Answer {i} for {domain}." for i in range(size)],
            "dedup_key": ids,
            "source_id": f"src{index:013d}",
            "source_row": np.arange(1, size + 1),
            "ingest_run_id": INGEST_RUN,
        }))
        d_early = rng.uniform(0.05, 0.6, size)
        d_late = 0.1 + (0.5 + 0.3 * index) * d_early + rng.normal(0.0, 0.05, size)
        if domain in fixed:
            d_early, d_late = (np.asarray(values, dtype=float) for values in fixed[domain])
        excluded = np.arange(size) < n_excluded
        profiles = None
        if n_layers is not None:
            profiles, d_early, d_late = _profiles(rng, d_early, d_late, n_layers)
        scores.append(pd.DataFrame({
            "candidate_id": ids,
            "model_fingerprint": model,
            "config_hash": config,
            "n_aligned": np.where(excluded, 0, 48),
            "d_early": np.where(excluded, np.nan, d_early),
            "d_late": np.where(excluded, np.nan, d_late),
            "ppl": rng.uniform(1.0, 20.0, size),
            "excluded_reason": np.where(excluded, "short_response", None),
            "run_id": SCORE_RUN,
            **({} if profiles is None else {"layer_divergence": [
                None if out else profile.tolist() for out, profile in zip(excluded, profiles)
            ]}),
        }))
    candidates = pd.concat(frames, ignore_index=True)  # also returned when not written, for references
    divergences = pd.concat(scores, ignore_index=True)
    divergences[["d_early", "d_late"]] = divergences[["d_early", "d_late"]].astype(object).where(
        divergences[["d_early", "d_late"]].notna(), None
    )
    sources = pd.DataFrame({
        "source_id": sorted(candidates["source_id"].unique()),
    })
    sources["path"] = [f"/data/{sid}.jsonl" for sid in sources["source_id"]]
    sources["sha256"] = [f"{i:064x}" for i in range(len(sources))]
    for column in ("n_bytes", "n_rows_read", "n_inserted"):
        sources[column] = 100
    for column in ("n_duplicates", "n_quarantined"):
        sources[column] = 0
    sources["ingest_run_id"] = INGEST_RUN
    if with_candidates:
        _append_if_absent(con, "sources", sources, "source_id")
        con.append("candidates", candidates, by_name=True)
    _append_if_absent(con, "models", pd.DataFrame([{
        "model_fingerprint": model, "name_or_path": f"/models/{model}", "dtype": "float32", "n_layers": n_layers or 12,
    }]), "model_fingerprint")
    _append_if_absent(con, "scoring_configs", pd.DataFrame([{
        "config_hash": config, "config": '{"prompt_tokens": 256, "horizon": 48}',
    }]), "config_hash")
    con.append("divergences", divergences, by_name=True)
    return PoolTables(candidates=candidates, divergences=divergences, sources=sources)


def _profiles(
    rng: np.random.Generator, early: np.ndarray, late: np.ndarray, n_layers: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Profiles rising from about `early` to about `late` with per-layer noise, and their default-split means."""
    depth = np.linspace(0.0, 1.0, n_layers)
    profiles = early[:, None] + (late - early)[:, None] * depth[None, :] + rng.normal(0.0, 0.03, (len(early), n_layers))
    early_layers, late_layers = layer_split(n_layers, 0.33, 0.66)
    means = [profiles[:, [layer - 1 for layer in layers]].mean(axis=1) for layers in (early_layers, late_layers)]
    return profiles, means[0], means[1]


def _append_if_absent(con: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame, key: str) -> None:
    present = {row[0] for row in con.table(table).select(key).fetchall()}
    fresh = frame[~frame[key].isin(present)]
    if len(fresh):
        con.append(table, fresh, by_name=True)


def scored_store(folder: Path) -> Path:
    """`folder` with a capsel.duckdb holding a scored pool of 20 code and 20 math candidates."""
    con = open_db(folder / "capsel.duckdb")
    make_pool(con, {"code": 20, "math": 20})
    con.close()
    return folder


def pinned_rows(con: duckdb.DuckDBPyConnection) -> int:
    """Rows of CAP's pinned scores the connection holds now (capsel.selection.pinned_scores)."""
    return con.execute("select count(*) from cap_scores_pinned").fetchone()[0]
