"""Results of any scorer in the store: the key they carry, registration, progress, pending rows and writes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import duckdb
import orjson

from capsel.db import one_row, run_sql
from capsel.db.records import fetch_records
from capsel.faults import fault_point
from capsel.scorers.base import Scorer
from capsel.store.scope import PendingQuery, Scope
from capsel.store.tables import append_method_results, insert_divergences, insert_generations


@dataclass(frozen=True)
class ResultKey:
    """The key of every row a scorer writes: method, model fingerprint, config hash (and CAP's generation hash)."""

    method: str
    model_fingerprint: str
    config_hash: str
    generation_hash: str | None = None


def result_key(scorer: Scorer) -> ResultKey:
    """The key a scorer writes under (without registering anything)."""
    return ResultKey(scorer.method, scorer.identity.fingerprint, scorer.config_hash, scorer.generation_hash)


def register(con: duckdb.DuckDBPyConnection, scorer: Scorer) -> ResultKey:
    """Record the scorer's model (LM, encoder or rater) and its configs once each; return the key."""
    identity = scorer.identity
    run_sql(con, "store/scoring_model_register", {
        "model_fingerprint": identity.fingerprint,
        "name_or_path": identity.name_or_path,
        "revision": identity.revision,
        "weight_files": orjson.dumps(identity.weight_files).decode(),
        "dtype": identity.dtype,
        "architecture": identity.architecture,
        "n_layers": identity.n_layers,
    })
    for row in scorer.config_rows():
        run_sql(con, "store/scoring_config_register", {
            "config_hash": row.config_hash, "config": orjson.dumps(row.body).decode(),
            "generation_hash": row.generation_hash,
        })
    return result_key(scorer)


def known_configs(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """Every stored config as {"config_hash", "config" (parsed)}."""
    return [
        {"config_hash": row["config_hash"], "config": orjson.loads(row["config"])}
        for row in fetch_records(con, "store/scoring_configs_list")
    ]


def progress(con: duckdb.DuckDBPyConnection, scorer: Scorer, key: ResultKey, scope: Scope) -> tuple[int, int]:
    """(candidates in scope, how many already have a result under `key` in the scorer's table)."""
    if scorer.table == "generations":  # y-hat alone: done where its generation config has a row
        sql, params = "store/generation_progress", _generation_params(key)
    else:
        sql, params = "store/result_progress", _result_params(key)
    n_in_scope, n_done = one_row(con, sql, {"domain": scope.domain, **params})
    return int(n_in_scope), int(n_done)


def pending_query(con: duckdb.DuckDBPyConnection, scorer: Scorer, key: ResultKey) -> PendingQuery:
    """The SQL paging the scorer's pending candidates and its bound parameters: for y-hat, the candidates without
    one; for the rest, those without a result, with the stored y-hat and CAP configs the scorer may reuse."""
    if scorer.table == "generations":
        return PendingQuery("store/generation_pending_bounds", "store/generation_pending", _generation_params(key))
    return PendingQuery("store/result_pending_bounds", "store/result_pending", _result_params(key), {
        "generation_hash": key.generation_hash,
        "cap_config_hashes": scorer.reusable_cap_configs(known_configs(con)),
    })


def _result_params(key: ResultKey) -> dict:
    return {"method": key.method, "model_fingerprint": key.model_fingerprint, "config_hash": key.config_hash}


def _generation_params(key: ResultKey) -> dict:
    return {"model_fingerprint": key.model_fingerprint, "generation_hash": key.generation_hash}


def write_results(
    con: duckdb.DuckDBPyConnection, key: ResultKey, table: str, run_id: str, results: Sequence
) -> None:
    """Append a batch of results to the scorer's table (inside a transaction): CAP's y-hat and divergences, or a
    baseline's scores, embeddings or gradient features."""
    if results:
        WRITERS.get(table, _write_baseline)(con, key, table, run_id, results)


def _write_generations(con: duckdb.DuckDBPyConnection, key: ResultKey, table: str, run_id: str,
                       results: Sequence) -> None:
    assert key.generation_hash is not None  # only CAP's scorers write y-hat
    insert_generations(con, key.model_fingerprint, key.generation_hash, run_id, results)


def _write_cap(con: duckdb.DuckDBPyConnection, key: ResultKey, table: str, run_id: str, results: Sequence) -> None:
    generations = [result.generation for result in results if result.generation is not None]
    if generations and key.generation_hash is not None:
        insert_generations(con, key.model_fingerprint, key.generation_hash, run_id, generations)
    fault_point("score.mid_batch")
    insert_divergences(con, key.model_fingerprint, key.config_hash, run_id, [result.divergence for result in results])


def _write_baseline(con: duckdb.DuckDBPyConnection, key: ResultKey, table: str, run_id: str,
                    results: Sequence) -> None:
    append_method_results(con, table, key.method, key.model_fingerprint, key.config_hash, run_id, results)


# CAP's results fill two tables (its y-hat and its divergences), the y-hat pre-pass one; each baseline table takes
# its declared columns
WRITERS = {"divergences": _write_cap, "generations": _write_generations}
