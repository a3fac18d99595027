"""DuckDB side of scoring: what is pending for a (model, config) key, and whole-batch writes of results."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Sequence

import duckdb
import orjson
import pyarrow as pa

from capsel.db import run_sql, sql_text
from capsel.db.records import fetch_records
from capsel.scoring.config import ScoringConfig
from capsel.models.loading import ModelInfo
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


def write_generations(
    con: duckdb.DuckDBPyConnection, keys: ScoreKeys, run_id: str, results: Sequence[GenerationResult]
) -> None:
    """Insert a batch of generation rows in one statement (call inside `transaction`)."""
    ids = pa.list_(pa.int32())
    table = pa.table({
        "candidate_id": pa.array([r.candidate_id for r in results], pa.string()),
        "prompt_ids": pa.array([r.prompt_ids for r in results], ids),
        "response_ids": pa.array([r.response_ids for r in results], ids),
        "generated_ids": pa.array([r.generated_ids for r in results], ids),
        "excluded_reason": pa.array([r.excluded_reason for r in results], pa.string()),
        "generator": pa.array([r.generator for r in results], pa.string()),
    })
    _insert(con, _keyed(table, keys.model_fingerprint, keys.generation_hash, run_id), "generations")


def write_divergences(
    con: duckdb.DuckDBPyConnection, keys: ScoreKeys, run_id: str, results: Sequence[DivergenceResult]
) -> None:
    """Insert a batch of divergence rows in one statement (call inside `transaction`)."""
    table = pa.table({
        "candidate_id": pa.array([r.candidate_id for r in results], pa.string()),
        "n_aligned": pa.array([r.n_aligned for r in results], pa.int32()),
        "layer_divergence": pa.array([r.layer_divergence for r in results], pa.list_(pa.float64())),
        "d_early": pa.array([r.d_early for r in results], pa.float64()),
        "d_late": pa.array([r.d_late for r in results], pa.float64()),
        "ppl": pa.array([r.ppl for r in results], pa.float64()),
        "excluded_reason": pa.array([r.excluded_reason for r in results], pa.string()),
    })
    _insert(con, _keyed(table, keys.model_fingerprint, keys.scoring_hash, run_id), "divergences")


def _keyed(table: pa.Table, model_fingerprint: str, config_hash: str, run_id: str) -> pa.Table:
    for name, value in (("model_fingerprint", model_fingerprint), ("config_hash", config_hash), ("run_id", run_id)):
        table = table.append_column(name, pa.repeat(pa.scalar(value, pa.string()), table.num_rows))
    return table


def _insert(con: duckdb.DuckDBPyConnection, table: pa.Table, target: str) -> None:
    """Run sql/<target>_insert.sql over the batch, visible to it as `batch_<target>`.

    One statement per batch: row-by-row inserts cost about a millisecond each, which at GPU
    rates (50-150 candidates/s, two rows each) would be a tenth of the run or more.
    """
    if table.num_rows:
        con.from_arrow(table).query(f"batch_{target}", sql_text(f"{target}_insert"))
