"""Whole-batch inserts of results into their tables, one SQL statement per batch and table."""

from __future__ import annotations

from typing import Callable, Sequence

import duckdb
import pyarrow as pa

from capsel.cap_engine.results import DivergenceResult, GenerationResult
from capsel.db import sql_text

IDS = pa.list_(pa.int32())


def insert_generations(
    con: duckdb.DuckDBPyConnection, model_fingerprint: str, generation_hash: str, run_id: str,
    results: Sequence[GenerationResult],
) -> None:
    """Generation rows (prompt, response and y-hat ids, exclusion) under (model, generation config)."""
    table = pa.table({
        "candidate_id": pa.array([r.candidate_id for r in results], pa.string()),
        "prompt_ids": pa.array([r.prompt_ids for r in results], IDS),
        "response_ids": pa.array([r.response_ids for r in results], IDS),
        "generated_ids": pa.array([r.generated_ids for r in results], IDS),
        "excluded_reason": pa.array([r.excluded_reason for r in results], pa.string()),
        "generator": pa.array([r.generator for r in results], pa.string()),
    })
    _insert(con, _keyed(table, model_fingerprint, generation_hash, run_id), "generations")


def insert_divergences(
    con: duckdb.DuckDBPyConnection, model_fingerprint: str, scoring_hash: str, run_id: str,
    results: Sequence[DivergenceResult],
) -> None:
    """Divergence rows (D_l profile, D_early, D_late, PPL, exclusion) under (model, scoring config)."""
    table = pa.table({
        "candidate_id": pa.array([r.candidate_id for r in results], pa.string()),
        "n_aligned": pa.array([r.n_aligned for r in results], pa.int32()),
        "layer_divergence": pa.array([r.layer_divergence for r in results], pa.list_(pa.float64())),
        "d_early": pa.array([r.d_early for r in results], pa.float64()),
        "d_late": pa.array([r.d_late for r in results], pa.float64()),
        "ppl": pa.array([r.ppl for r in results], pa.float64()),
        "excluded_reason": pa.array([r.excluded_reason for r in results], pa.string()),
        "images_dropped": pa.array([r.images_dropped for r in results], pa.int32()),
    })
    _insert(con, _keyed(table, model_fingerprint, scoring_hash, run_id), "divergences")


def _reasons(results: Sequence) -> pa.Array:
    return pa.array([result.excluded_reason for result in results], type=pa.string())


def _vectors(results: Sequence) -> pa.Array:
    return pa.array([result.embedding for result in results], type=pa.list_(pa.float32()))


# what each baseline table stores of a batch beside its key: the column naming the scorer's model, and the values
BASELINE_COLUMNS: dict[str, tuple[str, Callable[[Sequence, str], dict]]] = {
    "method_scores": ("model_fingerprint", lambda results, method: {
        "method": [method] * len(results), "score": pa.array([r.score for r in results], type=pa.float64()),
        "excluded_reason": _reasons(results)}),
    "embeddings": ("encoder_fingerprint", lambda results, method: {"embedding": _vectors(results)}),
    "gradient_features": ("model_fingerprint", lambda results, method: {
        "feature": _vectors(results), "excluded_reason": _reasons(results)}),
}


def append_method_results(
    con: duckdb.DuckDBPyConnection, table: str, method: str, model_fingerprint: str, config_hash: str,
    run_id: str, results: Sequence,
) -> None:
    """A baseline's rows: a score per candidate (`method_scores`) or a vector (`embeddings`, `gradient_features`)."""
    n = len(results)
    model_column, values = BASELINE_COLUMNS[table]
    columns = {"candidate_id": [result.candidate_id for result in results], model_column: [model_fingerprint] * n,
               "config_hash": [config_hash] * n, **values(results, method), "run_id": [run_id] * n}
    con.append(table, pa.table(columns).to_pandas(), by_name=True)


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
        con.from_arrow(table).query(f"batch_{target}", sql_text(f"store/{target}_insert"))
