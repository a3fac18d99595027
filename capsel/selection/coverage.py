"""k-center selection at select time: greedy farthest-point over each domain's stored embeddings."""

from __future__ import annotations

from typing import Sequence

import duckdb
import numpy as np
import pandas as pd
import pyarrow.compute as pc

from capsel.db.sqlfiles import sql_relation
from capsel.errors import CapselError
from capsel.selection.budget import Quota
from capsel.selection.farthest_point import greedy_k_center
from capsel.selection.scoring_key import ScoringKey

READ_BATCH_ROWS = 65_536


def domain_embeddings(con: duckdb.DuckDBPyConnection, key: ScoringKey, domain: str) -> tuple[list[str], np.ndarray]:
    """(candidate ids in id order, their embeddings as one float32 [n, d] array, row i for id i).

    The ids come sorted first; the vectors then stream from DuckDB in Arrow batches, each row written
    straight to its id's row, so memory peaks near the array itself (n·d·4 bytes), not at copies of it.
    """
    params = {"model_fingerprint": key.model_fingerprint, "config_hash": key.config_hash, "domain": domain}
    ids = sql_relation(con, "selection/kcenter_embedding_ids", params).to_arrow_table().column(0).to_numpy(
        zero_copy_only=False).astype(str)
    points: np.ndarray | None = None
    filled = 0
    for batch in sql_relation(con, "selection/kcenter_embeddings", params).to_arrow_reader(READ_BATCH_ROWS):
        column = batch.column(1)
        lengths = pc.list_value_length(column).to_numpy(zero_copy_only=False)
        if points is None:
            points = np.empty((len(ids), int(lengths[0])), dtype=np.float32)
        if lengths.min() != points.shape[1] or lengths.max() != points.shape[1]:
            raise CapselError(f"domain {domain!r}: embeddings of different sizes under {key.describe()}; rescore it")
        rows = np.searchsorted(ids, batch.column(0).to_numpy(zero_copy_only=False).astype(str))
        points[rows] = pc.list_flatten(column).to_numpy(zero_copy_only=False).reshape(len(rows), points.shape[1])
        filled += len(rows)
    if filled != len(ids):
        raise CapselError(f"domain {domain!r}: embeddings changed while being read; select again")
    if points is None:
        return [], np.empty((0, 0), dtype=np.float32)
    return ids.tolist(), points


def select_coverage(con: duckdb.DuckDBPyConnection, quotas: Sequence[Quota], key: ScoringKey) -> pd.DataFrame:
    """Members per domain in greedy pick order; `score` is a pick's distance to the earlier picks (none: the first)."""
    frames = []
    for quota in quotas:
        if quota.k == 0:
            continue
        ids, points = domain_embeddings(con, key, quota.domain)
        centers = greedy_k_center(points, quota.k)
        distances = np.where(np.isfinite(centers.distances), centers.distances, np.nan)
        frames.append(pd.DataFrame({
            "candidate_id": [ids[index] for index in centers.order],
            "domain": quota.domain,
            "score": distances,
            "rank": np.arange(1, len(centers.order) + 1, dtype=np.int64),
        }))
    columns = ["candidate_id", "domain", "d_early", "d_late", "cap", "z", "score", "rank"]
    if not frames:
        return pd.DataFrame(columns=columns)
    members = pd.concat(frames, ignore_index=True)
    for column in ("d_early", "d_late", "cap", "z"):
        members[column] = np.nan
    return members[columns]
