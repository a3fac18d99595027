"""DuckDB side of baseline scoring: register scorer and config, count what is done, write whole batches."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import duckdb
import orjson
import pyarrow as pa

from capsel.baselines.scorer import BaselineResult, BaselineScorer
from capsel.db import run_sql
from capsel.db.records import fetch_records
from capsel.scoring.store import Scope


@dataclass(frozen=True)
class BaselineKey:
    """The key of every row a scorer writes: method, scorer fingerprint and config hash."""

    method: str
    model_fingerprint: str
    config_hash: str

    def params(self) -> dict[str, str]:
        """Bound parameters naming the key."""
        return {"method": self.method, "model_fingerprint": self.model_fingerprint, "config_hash": self.config_hash}


def register(con: duckdb.DuckDBPyConnection, scorer: BaselineScorer) -> BaselineKey:
    """Record the scorer's model (LM, encoder or rater) and its config once each; return the key."""
    identity = scorer.identity
    run_sql(con, "scoring_model_register", {
        "model_fingerprint": identity.fingerprint,
        "name_or_path": identity.name_or_path,
        "revision": identity.revision,
        "weight_files": orjson.dumps(identity.weight_files).decode(),
        "dtype": identity.dtype,
        "architecture": identity.architecture,
        "n_layers": identity.n_layers,
    })
    run_sql(con, "scoring_config_register", {
        "config_hash": scorer.config.hash, "config": orjson.dumps(scorer.config.as_dict()).decode(),
        "generation_hash": None,
    })
    return BaselineKey(scorer.method, identity.fingerprint, scorer.config.hash)


def known_configs(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """Every stored config as {"config_hash", "config" (parsed)}."""
    return [
        {"config_hash": row["config_hash"], "config": orjson.loads(row["config"])}
        for row in fetch_records(con, "scoring_configs_list")
    ]


def progress(con: duckdb.DuckDBPyConnection, key: BaselineKey, scope: Scope) -> tuple[int, int]:
    """(candidates in scope, how many already have a result under `key`)."""
    n_in_scope, n_done = run_sql(con, "baseline_progress", {"domain": scope.domain, **key.params()}).fetchone()
    return int(n_in_scope), int(n_done)


def write_results(
    con: duckdb.DuckDBPyConnection, key: BaselineKey, table: str, run_id: str, results: Sequence[BaselineResult]
) -> None:
    """Append a batch of results to `method_scores`, `embeddings` or `gradient_features` (inside a transaction)."""
    if not results:
        return
    n = len(results)
    # embeddings name their scorer encoder_fingerprint; the other tables model_fingerprint
    columns = {
        "candidate_id": [result.candidate_id for result in results],
        "encoder_fingerprint" if table == "embeddings" else "model_fingerprint": [key.model_fingerprint] * n,
        "config_hash": [key.config_hash] * n,
    }
    reasons = pa.array([result.excluded_reason for result in results], type=pa.string())
    vectors = pa.array([result.embedding for result in results], type=pa.list_(pa.float32()))
    if table == "embeddings":
        columns["embedding"] = vectors
    elif table == "gradient_features":
        columns.update(feature=vectors, excluded_reason=reasons)
    else:
        scores = pa.array([result.score for result in results], type=pa.float64())
        columns.update(method=[key.method] * n, score=scores, excluded_reason=reasons)
    rows = pa.table({**columns, "run_id": [run_id] * n})
    con.append(table, rows.to_pandas(), by_name=True)
