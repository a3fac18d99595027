"""Ground truth of a lab pool keyed by the candidate ids ingest gives its records."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from capsel.ingest.dedup_key import candidate_id, dedup_key

if TYPE_CHECKING:  # the lab's commands name their pools' ids at --help time; pandas loads only for a table
    import pandas as pd

LABEL_COLUMNS = ["candidate_id", "domain", "lab_label", "lab_detail", "lab_fact_id", "lab_id"]


def record_candidate_id(record: dict) -> str:
    """The candidate id ingest assigns to a lab record (domain + normalised instruction and input)."""
    return candidate_id(record["domain"].strip(), dedup_key(record["instruction"], record.get("input") or ""))


def candidate_labels(records: Iterable[dict]) -> pd.DataFrame:
    """One row per candidate id with the label of its first record, as dedup keeps the first occurrence."""
    import pandas as pd

    rows, seen = [], set()
    for record in records:
        key = record_candidate_id(record)
        if key in seen:
            continue
        seen.add(key)
        rows.append([key, record["domain"], record["lab_label"], record.get("lab_detail", ""),
                     record.get("lab_fact_id", ""), record.get("lab_id", "")])
    return pd.DataFrame(rows, columns=LABEL_COLUMNS)
