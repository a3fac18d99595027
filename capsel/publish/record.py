"""The `selections` and `selection_members` rows of a selection: written as 'publishing', then published or dropped."""

from __future__ import annotations

from datetime import datetime

import duckdb
import orjson
import pandas as pd

from capsel.db import run_sql


def record_selection(
    con: duckdb.DuckDBPyConnection, manifest: dict, members: pd.DataFrame, out_dir: str, created_at: datetime
) -> None:
    """Insert the selection, in state 'publishing', and its members; the caller owns the transaction.

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


def mark_published(con: duckdb.DuckDBPyConnection, selection_id: str) -> None:
    """The selection's folder is in place: mark its row 'published'."""
    run_sql(con, "publish/selection_mark_published", {"selection_id": selection_id})


def forget_selection(con: duckdb.DuckDBPyConnection, selection_id: str) -> None:
    """Delete a 'publishing' selection and its members (its folder never appeared); the caller owns the transaction."""
    run_sql(con, "publish/selection_members_forget", {"selection_id": selection_id})
    run_sql(con, "publish/selection_forget", {"selection_id": selection_id})
