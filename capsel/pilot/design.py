"""A pilot's data: the pool ingested once (dedup and quarantine as `capsel ingest` does), then drawn with the seed
into held-out rows and disjoint sub-pools, each written as a file of its own that its replicate ingests.

The draw orders the pool's candidates by id and permutes them with numpy's generator of the seed, so the same pool
and seed give the same held-out rows and sub-pools on any machine; design.json records what was drawn.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from capsel.db import open_db
from capsel.db.records import fetch_records
from capsel.errors import CapselError
from capsel.ingest.pipeline import IngestOptions
from capsel.ingest.records import parse_field_map
from capsel.pilot.spec import PilotSpec
from capsel.stages.context import RunContext
from capsel.stages.ingest import IngestRequest, ingest
from capsel.versioning import file_sha256

DESIGN_FILE, POOL_STORE = "design.json", "pool.duckdb"
_ROW_FIELDS = ("instruction", "input", "response", "domain")


@dataclass(frozen=True)
class Design:
    """Where each part of the pool went: the held-out file, each sub-pool's file, and the counts."""

    pool_sha256: str
    n_pool: int  # candidates after dedup and quarantine
    n_quarantined: int
    n_duplicates: int
    heldout: str
    n_heldout: int
    subpools: tuple[str, ...]
    subpool_rows: int

    def subpool(self, replicate: int) -> Path:
        """The file of replicate `replicate`'s sub-pool."""
        return Path(self.subpools[replicate])


def draw(spec: PilotSpec, folder: Path, settings) -> Design:
    """The pilot's held-out rows and sub-pools (drawn once; a rerun reads design.json back)."""
    recorded = folder / DESIGN_FILE
    # a store changes as it is used: its candidates, not its bytes, are what the draw must find again
    pool_sha = _candidates_digest(spec, folder, settings) if _is_store(spec) else file_sha256(Path(spec.pool))
    if recorded.is_file():
        stored = json.loads(recorded.read_text())
        design = Design(**{**stored, "subpools": tuple(stored["subpools"])})
        if design.pool_sha256 != pool_sha:
            raise CapselError(f"{spec.pool} changed since this pilot drew its sub-pools in {folder}; start the pilot "
                              "in another folder")
        return design
    candidates, counts = _ingested(spec, folder, settings)
    order = np.random.default_rng(spec.seed).permutation(len(candidates))
    shuffled = [candidates[index] for index in order]
    n_heldout = 0 if spec.heldout else spec.heldout_rows
    left = len(shuffled) - n_heldout
    size = spec.subpool_rows or left // spec.replicates
    if size * spec.replicates > left or size < 10:
        raise CapselError(f"the pool holds {len(candidates)} usable rows: {n_heldout} held out leave {left}, too few "
                          f"for {spec.replicates} sub-pools of {size} rows; lower --replicates or --subpool-rows, or "
                          "give --heldout")
    heldout = Path(spec.heldout).absolute() if spec.heldout else _write(folder / "heldout.jsonl",
                                                                          shuffled[:n_heldout])
    if spec.heldout:
        with open(heldout, "rb") as handle:
            n_heldout = sum(1 for line in handle if line.strip())
    subpools = tuple(str(_write(folder / f"replicate-{index}" / "subpool.jsonl",
                                shuffled[n_heldout + index * size:n_heldout + (index + 1) * size]))
                     for index in range(spec.replicates))
    design = Design(pool_sha, len(candidates), counts["quarantined"], counts["duplicates"], str(heldout),
                    n_heldout, subpools, size)
    recorded.write_text(json.dumps(asdict(design), indent=1) + "\n")
    return design


def _is_store(spec: PilotSpec) -> bool:
    return Path(spec.pool).suffix == ".duckdb"


def _candidates_digest(spec: PilotSpec, folder: Path, settings) -> str:
    candidates, _ = _ingested(spec, folder, settings)
    return hashlib.sha256("\n".join(row["candidate_id"] for row in candidates).encode()).hexdigest()


def _ingested(spec: PilotSpec, folder: Path, settings) -> tuple[list[dict], dict[str, int]]:
    """The pool's candidates as ingest keeps them (ordered by id), and what it dropped: a pool file is ingested into
    the pilot's own store; a capsel store (a .duckdb file) is read as it is, never written."""
    folder.mkdir(parents=True, exist_ok=True)
    is_store = _is_store(spec)
    con = open_db(Path(spec.pool), read_only=True, must_exist=True) if is_store else open_db(folder / POOL_STORE)
    try:
        if not is_store:
            options = IngestOptions(domain=spec.domain,
                                    fields=parse_field_map([spec.field_map] if spec.field_map else []))
            ingest(IngestRequest([spec.pool], options), RunContext(con, settings))  # a rerun finds it ingested
        [counts] = fetch_records(con, "pilot/pool_counts", {})
        rows = fetch_records(con, "pilot/pool_candidates", {})
        reasons = fetch_records(con, "pilot/pool_quarantine_reasons", {})
    finally:
        con.close()
    if not rows:
        why = ", ".join(f"{reason['reason']} {reason['n_rows']}" for reason in reasons)
        raise CapselError(f"{spec.pool}: no row could be ingested ({counts['n_quarantined']} of {counts['n_read']} "
                          f"quarantined: {why}); check [[field_map]] and [[domain]] (`capsel quarantine --db "
                          f"{spec.pool if is_store else folder / POOL_STORE}` shows the rows)")
    return rows, {"quarantined": counts["n_quarantined"], "duplicates": counts["n_duplicates"]}


def _write(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps({field: row[field] for field in _ROW_FIELDS}, ensure_ascii=False) + "\n")
    return path
