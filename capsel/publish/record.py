"""The `selections` and `selection_members` rows of a published selection."""

from __future__ import annotations

from datetime import datetime

import duckdb
import orjson
import pandas as pd

from capsel.db import run_sql


def record_selection(
    con: duckdb.DuckDBPyConnection, manifest: dict, members: pd.DataFrame, out_dir: str, created_at: datetime
) -> None:
    """Insert the selection and its members; the caller owns the transaction.

    `created_at` (timezone-aware) is stored as naive UTC.
    """
    request = manifest["request"]
    run_sql(con, "publish/selection_insert", {
        "selection_id": manifest["selection_id"],
        "method": manifest["method"],
        "budget": request["budget"],
        "budget_mode": request["budget_mode"],
        "domains": [entry["domain"] for entry in manifest["domains"]],
        "seed": manifest["seed"],
        "model_fingerprint": manifest["model"]["fingerprint"],
        "config_hash": manifest["scoring_config"]["config_hash"],
        "run_id": manifest["run_id"],
        "out_dir": out_dir,
        "n_members": manifest["n_members"],
        "manifest": orjson.dumps(manifest).decode(),
        "created_at": created_at.replace(tzinfo=None),
    })
    rows = pd.DataFrame({
        "selection_id": manifest["selection_id"],
        "candidate_id": members["candidate_id"].to_numpy(),
        "domain": members["domain"].to_numpy(),
        "rank": members["rank"].astype("int32").to_numpy(),
        "score": members["score"].astype("float64").to_numpy(),
        "z": members["z"].astype("float64").to_numpy(),
    })
    if len(rows):
        con.append("selection_members", rows, by_name=True)
