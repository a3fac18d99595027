"""DuckDB side of scoring: what is pending for a (model, config) key, and whole-batch writes of results."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Sequence

import duckdb
import orjson

from capsel.db import run_sql
from capsel.db.records import fetch_records
from capsel.scoring.config import ScoringConfig
from capsel.scoring.model_loading import ModelInfo
from capsel.scoring.results import DivergenceResult, GenerationResult


@dataclass(frozen=True)
class ScoreKeys:
    """The keys every result row carries: model fingerprint and the two configuration hashes."""

    model_fingerprint: str
    generation_hash: str
    scoring_hash: str

    def generation_params(self) -> dict[str, str]:
        """Bound parameters naming the generation key."""
        return {"model_fingerprint": self.model_fingerprint, "generation_hash": self.generation_hash}

    def params(self) -> dict[str, str]:
        """Bound parameters naming the generation and the scoring key."""
        return {**self.generation_params(), "scoring_hash": self.scoring_hash}


@dataclass(frozen=True)
class Scope:
    """Which candidates a run covers: an optional domain and an optional cap on how many to process."""

    domain: str | None = None
    limit: int | None = None


def register(con: duckdb.DuckDBPyConnection, info: ModelInfo, config: ScoringConfig) -> ScoreKeys:
    """Record the model and both configurations (once each) and return the result keys."""
    run_sql(con, "scoring_model_register", {
        "model_fingerprint": info.fingerprint,
        "name_or_path": info.source.name_or_path,
        "revision": info.source.revision,
        "weight_files": orjson.dumps(info.source.files).decode(),
        "dtype": info.dtype,
        "architecture": info.architecture,
        "n_layers": info.n_layers,
    })
    for digest, body, generation_hash in ((config.generation_hash, config.generation_config(), None),
                                          (config.scoring_hash, config.scoring_config(), config.generation_hash)):
        run_sql(con, "scoring_config_register", {
            "config_hash": digest, "config": orjson.dumps(body).decode(), "generation_hash": generation_hash,
        })
    return ScoreKeys(info.fingerprint, config.generation_hash, config.scoring_hash)


def progress(con: duckdb.DuckDBPyConnection, keys: ScoreKeys, scope: Scope) -> dict[str, int]:
    """Candidates in scope, and how many already have a generation and a divergence under these keys."""
    cursor = run_sql(con, "scoring_progress", {"domain": scope.domain, **keys.params()})
    n_in_scope, n_generated, n_scored = cursor.fetchone()
    return {"n_in_scope": n_in_scope, "n_generated": n_generated, "n_scored": n_scored}


def pending_chunks(
    con: duckdb.DuckDBPyConnection, sql_name: str, key_params: dict[str, str], scope: Scope, chunk_size: int
) -> Iterator[list[dict]]:
    """Pending rows in candidate-id order, chunk by chunk (keyset paging), at most scope.limit in all."""
    after, remaining = "", scope.limit
    while remaining is None or remaining > 0:
        n_rows = chunk_size if remaining is None else min(chunk_size, remaining)
        rows = fetch_records(con, sql_name, {
            "domain": scope.domain, "after_candidate_id": after, "n_rows": n_rows, **key_params,
        })
        if not rows:
            return
        yield rows
        after = rows[-1]["candidate_id"]
        if remaining is not None:
            remaining -= len(rows)


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """All or nothing: a batch's rows commit together, or none do (Ctrl-C included)."""
    con.begin()
    try:
        yield
    except BaseException:
        con.rollback()
        raise
    con.commit()


def write_generations(
    con: duckdb.DuckDBPyConnection, keys: ScoreKeys, run_id: str, results: Sequence[GenerationResult]
) -> None:
    """Insert generation rows (call inside `transaction`)."""
    for result in results:
        run_sql(con, "generations_insert", {
            "candidate_id": result.candidate_id,
            "model_fingerprint": keys.model_fingerprint,
            "config_hash": keys.generation_hash,
            "prompt_ids": result.prompt_ids,
            "response_ids": result.response_ids,
            "generated_ids": result.generated_ids,
            "excluded_reason": result.excluded_reason,
            "generator": result.generator,
            "run_id": run_id,
        })


def write_divergences(
    con: duckdb.DuckDBPyConnection, keys: ScoreKeys, run_id: str, results: Sequence[DivergenceResult]
) -> None:
    """Insert divergence rows (call inside `transaction`)."""
    for result in results:
        run_sql(con, "divergences_insert", {
            "candidate_id": result.candidate_id,
            "model_fingerprint": keys.model_fingerprint,
            "config_hash": keys.scoring_hash,
            "n_aligned": result.n_aligned,
            "layer_divergence": result.layer_divergence,
            "d_early": result.d_early,
            "d_late": result.d_late,
            "ppl": result.ppl,
            "excluded_reason": result.excluded_reason,
            "run_id": run_id,
        })
