"""Selection ids: sortable by creation time, suffixed with a hash of what was selected."""

from __future__ import annotations

import hashlib
from datetime import datetime

import pandas as pd


def members_digest(members: pd.DataFrame) -> str:
    """sha256 over (domain, rank, candidate_id) of every member, in order."""
    # whole columns at once: a row-by-row loop took seconds at a million members
    lines = (members["domain"].astype(str) + "\t" + members["rank"].astype(str) + "\t"
             + members["candidate_id"].astype(str) + "\n")
    return hashlib.sha256("".join(lines.tolist()).encode()).hexdigest()


def new_selection_id(members_sha256: str, created_at: datetime) -> str:
    """`sel-<UTC yyyymmddThhmmssZ>-<8 hex of the members digest>`."""
    return f"sel-{created_at:%Y%m%dT%H%M%SZ}-{members_sha256[:8]}"
