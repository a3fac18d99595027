"""Gather the lineage of one candidate or one selection from the store."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import duckdb
import orjson

from capsel.db.records import fetch_records
from capsel.errors import CapselError
from capsel.image_store.database import database_image_root
from capsel.image_store.store import ImageStore

Record = dict[str, Any]


@dataclass
class CandidateLineage:
    """A candidate, its images, where it came from, what scored it (CAP and baselines), and the selections
    holding it."""

    candidate: Record
    duplicates: list[Record]
    generations: list[Record]
    scores: list[Record]
    selections: list[Record]
    baseline_scores: list[Record] = field(default_factory=list)
    images: list[Record] = field(default_factory=list)


@dataclass
class SelectionLineage:
    """A selection, the sources of its members, the runs that produced them, its funnel, and the models fine-tuned
    on it with what each scored (one record per fine-tune and overall metric)."""

    selection: Record
    sources: list[Record]
    runs: list[Record]
    funnel: list[Record] = field(default_factory=list)
    finetunes: list[Record] = field(default_factory=list)


_CANDIDATE_LISTS = tuple(item.name for item in fields(CandidateLineage) if item.name != "candidate")


def trace(con: duckdb.DuckDBPyConnection, identifier: str) -> CandidateLineage | SelectionLineage:
    """Lineage of `identifier`, a candidate id or a selection id."""
    selection = fetch_records(con, "lineage/lineage_selection", {"selection_id": identifier})
    if selection:
        params = {"selection_id": identifier}
        funnel = selection[0].pop("funnel")
        return SelectionLineage(
            selection=selection[0],
            funnel=orjson.loads(funnel) if funnel else [],
            sources=fetch_records(con, "lineage/lineage_selection_sources", params),
            runs=fetch_records(con, "lineage/lineage_selection_runs", params),
            finetunes=fetch_records(con, "lineage/lineage_selection_finetunes", params),
        )
    candidate = fetch_records(con, "lineage/lineage_candidate", {"candidate_id": identifier})
    if candidate:
        # one row: the candidate's own columns, then one list column per CandidateLineage list field
        nested = {name: candidate[0].pop(name) for name in _CANDIDATE_LISTS}
        return CandidateLineage(candidate=candidate[0], **{**nested, "images": _with_paths(con, nested["images"])})
    raise CapselError(
        f"{identifier!r} is neither a candidate id nor a selection id in this database; "
        "ids are listed by `capsel export-scores` and `capsel selections`"
    )


def _with_paths(con: duckdb.DuckDBPyConnection, images: list[Record]) -> list[Record]:
    """Each image record with its file in the store beside the database."""
    root = database_image_root(con) if images else None
    if root is None:
        return images
    store = ImageStore(root)
    return [{**image, "path": str(store.path(image["sha256"], image["format"]))} for image in images]
