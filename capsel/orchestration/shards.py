"""Shards of pending scoring work: planned from the store in candidate-id order, loaded one at a time."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field

import duckdb

from capsel.db.records import fetch_records
from capsel.errors import CapselError
from capsel.scoring.inputs import CandidateText
from capsel.scoring.results import DivergenceResult, GenerationResult
from capsel.scoring.runner import candidate_texts, stored_generation
from capsel.scoring.store import Scope, ScoreKeys


@dataclass(frozen=True)
class ShardRange:
    """One shard of the plan: pending ids after `after_candidate_id`, up to and including `last_candidate_id`."""

    index: int
    after_candidate_id: str
    last_candidate_id: str
    n_candidates: int


@dataclass(frozen=True)
class ShardWork:
    """What a worker scores: candidates without y-hat (fused path) and stored y-hat awaiting a divergence."""

    index: int
    fresh: list[CandidateText]
    stored: list[GenerationResult]

    @property
    def n_candidates(self) -> int:
        """Candidates in the shard."""
        return len(self.fresh) + len(self.stored)


@dataclass(frozen=True)
class ShardResult:
    """What a worker returns: the rows to write and where and how fast they were computed."""

    index: int
    model_fingerprint: str
    generations: list[GenerationResult]
    divergences: list[DivergenceResult]
    worker: str
    wall_s: float
    excluded: dict[str, int] = field(default_factory=dict)


def worker_name() -> str:
    """host:pid of the process computing a shard, kept in the shard's runs row."""
    return f"{socket.gethostname()}:{os.getpid()}"


def plan_shards(
    con: duckdb.DuckDBPyConnection, keys: ScoreKeys, shard_size: int, scope: Scope = Scope()
) -> list[ShardRange]:
    """Cut the pending candidates of `keys` into shards of `shard_size`; a rerun plans only what is left."""
    if shard_size < 1:
        raise CapselError(f"shard size must be at least 1, got {shard_size}")
    rows = fetch_records(con, "shard_plan", {
        "domain": scope.domain, "shard_size": shard_size,
        "model_fingerprint": keys.model_fingerprint, "scoring_hash": keys.scoring_hash,
    })
    shards, after = [], ""
    for row in rows:
        shards.append(ShardRange(row["shard_index"], after, row["last_candidate_id"], row["n_candidates"]))
        after = row["last_candidate_id"]
    return shards


def load_shard(
    con: duckdb.DuckDBPyConnection, keys: ScoreKeys, shard: ShardRange, scope: Scope = Scope()
) -> ShardWork:
    """Read a planned shard's texts (and stored y-hat) from the store, right before it is dispatched."""
    rows = fetch_records(con, "scoring_pending_divergences", {
        "domain": scope.domain, "after_candidate_id": shard.after_candidate_id,
        "n_rows": shard.n_candidates, **keys.params(),
    })
    # only the flow writes, so the rows are exactly the planned ones; the bound guards a stale plan
    rows = [row for row in rows if row["candidate_id"] <= shard.last_candidate_id]
    return ShardWork(
        index=shard.index,
        fresh=candidate_texts([row for row in rows if not row["has_generation"]]),
        stored=[stored_generation(row) for row in rows if row["has_generation"]],
    )
