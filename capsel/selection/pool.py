"""How many candidates each domain has, how many were scored, excluded, and left eligible."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

import duckdb

from capsel.db.records import fetch_records
from capsel.errors import CapselError
from capsel.methods.registry import DEFAULT_METHOD
from capsel.selection.scoring_key import ScoringKey


@dataclass(frozen=True)
class DomainPool:
    """Counts for one domain; `size` is the pool a selection draws from."""

    domain: str
    n_candidates: int
    n_scored: int
    n_excluded: int
    n_guarded: int
    n_eligible: int
    scored: bool

    @property
    def size(self) -> int:
        """Eligible scored candidates, or every candidate for an unscored (random) pool."""
        return self.n_eligible if self.scored else self.n_candidates

    def as_dict(self) -> dict:
        """Plain dict for the manifest."""
        return {**asdict(self), "size": self.size}


def domain_pools(
    con: duckdb.DuckDBPyConnection, key: ScoringKey | None, domains: Sequence[str] | None = None,
    ppl_guard: float | None = None, ppl_guard_z: float | None = None,
) -> list[DomainPool]:
    """Per-domain counts for `key` (None: the unscored pool of all candidates); unknown domains are refused.

    `ppl_guard` (CAP's pool only) holds back the candidates above that percentile of PPL in their domain, and
    `ppl_guard_z` those whose log PPL lies above that robust z in their domain.
    """
    rows = fetch_records(con, "selection/domain_pool_counts", {
        "method": key.method if key else DEFAULT_METHOD,
        "model_fingerprint": key.model_fingerprint if key else None,
        "config_hash": key.config_hash if key else None,
        "domains": list(domains) if domains else None,
        "ppl_guard": ppl_guard,
        "ppl_guard_z": ppl_guard_z,
    })
    pools = [DomainPool(**row, scored=key is not None) for row in rows]
    if domains:
        missing = sorted(set(domains) - {pool.domain for pool in pools})
        if missing:
            known = sorted(row["domain"] for row in fetch_records(con, "selection/domain_pool_counts", {
                "method": DEFAULT_METHOD,
                "model_fingerprint": None, "config_hash": None, "domains": None, "ppl_guard": None, "ppl_guard_z": None,
            }))
            raise CapselError(f"no candidates in domain(s) {missing}; known domains: {known}")
    if not pools:
        raise CapselError("the database holds no candidates; run `capsel ingest` first")
    return pools
