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

GENERATIONS = "generations"  # y-hat alone's table
YHAT = "yhat"  # the pseudo-method results_done counts y-hat alone by


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


def register(con: duckdb.DuckDBPyConnection, scorer: Scorer) -> None:
    """Record the scorer's model (LM, encoder or rater) and its configs once each."""
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


def known_configs(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """Every stored config as {"config_hash", "config" (parsed)}."""
    return [
        {"config_hash": row["config_hash"], "config": orjson.loads(row["config"])}
        for row in fetch_records(con, "store/scoring_configs_list")
    ]


def progress(con: duckdb.DuckDBPyConnection, scorer: Scorer, key: ResultKey, scope: Scope) -> tuple[int, int]:
    """(candidates in scope, how many already have a result under `key` in the scorer's table)."""
    n_in_scope, n_done = one_row(con, "store/result_progress", {"domain": scope.domain, **_done_params(scorer, key)})
    return int(n_in_scope), int(n_done)


def pending_query(con: duckdb.DuckDBPyConnection, scorer: Scorer, key: ResultKey) -> PendingQuery:
    """The SQL paging the scorer's pending candidates and its bound parameters: those without a result (for y-hat
    alone: without one), with the stored y-hat and CAP configs the scorer may reuse."""
    reusable = [] if scorer.table == GENERATIONS else scorer.reusable_cap_configs(known_configs(con))
    return PendingQuery("store/result_pending_bounds", "store/result_pending", _done_params(scorer, key),
                        {"generation_hash": key.generation_hash, "cap_config_hashes": reusable})


def _done_params(scorer: Scorer, key: ResultKey) -> dict:
    # y-hat alone is done per generation config, under the pseudo-method results_done knows it by
    if scorer.table == GENERATIONS:
        return {"method": YHAT, "model_fingerprint": key.model_fingerprint, "config_hash": key.generation_hash}
    return {"method": key.method, "model_fingerprint": key.model_fingerprint, "config_hash": key.config_hash}


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
WRITERS = {"divergences": _write_cap, GENERATIONS: _write_generations}
