"""excluded.parquet beside a selection: every pool row it does not hold, with the stage and reason, and the
funnel from rows read to members that those rows add up to."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from capsel.db.records import fetch_records
from capsel.db.sqlfiles import sql_text
from capsel.publish.funnel import REASON_STAGES, funnel
from capsel.selection.pinned_scores import pinned_cap_scores
from capsel.selection.scoring_key import layer_params

if TYPE_CHECKING:  # the plan loads pandas, and EXCLUDED_FILE is read at --help time (`capsel demo`)
    from capsel.selection.plan import Selection

EXCLUDED_FILE = "excluded.parquet"


def write_excluded(con: duckdb.DuckDBPyConnection, selection: Selection, path: Path) -> list[dict]:
    """Stream the pool rows `selection` leaves out into `path` with DuckDB's COPY; return its funnel.

    The funnel is a list of `{"stage", "rows", "left"}`: `read` first (every row of the pool's domains
    that ingest read), then each stage's dropped rows and what is left after it, `eligible` after the
    scorer, and `selected` last. Counts are read back from the file, so they describe what was written.
    """
    with pinned_cap_scores(con, selection.key):
        # on `con`, not a cursor: the pinned scores are in its own temp table
        con.sql(sql_text("publish/excluded_rows"), params=_params(selection)).write_parquet(str(path))
    counts = fetch_records(con, "publish/excluded_stage_counts",
                           {"path": str(path), "reason_stages": list(REASON_STAGES)})
    return funnel(counts, len(selection.members))


def _params(selection: Selection) -> dict:
    request, key = selection.request, selection.key
    method = request.method
    score_order = (request.order or selection.selector.default_order) if selection.selector.ranks_by_score else None
    return {
        "member_ids": selection.members["candidate_id"].astype(str).tolist(),
        "domains": list(request.domains) if request.domains else None,
        "method": method,
        "order": score_order,
        "seed": int(request.seed),
        "key_method": key.method if key else None,
        "model_fingerprint": key.model_fingerprint if key else None,
        "config_hash": key.config_hash if key else None,
        "ppl_guard": request.ppl_guard,
        "ppl_guard_z": request.ppl_guard_z,
        **layer_params(key),
    }
