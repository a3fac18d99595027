"""Selection ids: sortable by creation time, suffixed with a hash of what was selected."""

from __future__ import annotations

import hashlib
from datetime import datetime

import pandas as pd


def members_digest(members: pd.DataFrame) -> str:
    """sha256 over (domain, rank, candidate_id) of every member, in order."""
    digest = hashlib.sha256()
    for domain, rank, candidate_id in members[["domain", "rank", "candidate_id"]].itertuples(index=False):
        digest.update(f"{domain}\t{rank}\t{candidate_id}\n".encode())
    return digest.hexdigest()


def new_selection_id(members_sha256: str, created_at: datetime) -> str:
    """`sel-<UTC yyyymmddThhmmssZ>-<8 hex of the members digest>`."""
    return f"sel-{created_at:%Y%m%dT%H%M%SZ}-{members_sha256[:8]}"
