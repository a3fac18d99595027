"""CAP's z computed once per stage: every query of the stage that ranks by it reads the same pinned copy.

A whole-pool refit and reselect reads z five times (the fit's spread, the extreme examples, the picks, the report's
points, excluded.parquet). Computing it joins every score to its candidate and refits (about 4 s at 8M rows on
2 cores), and DuckDB's parallel sums make two computations differ in the 13th digit, so the picks and
excluded.parquet's ranks could disagree on a near tie. A reader pins the key itself; a stage pins it around all
of its readers, and the readers inside reuse that copy; in a run of several steps, the residualize step's pin lasts
to the run's end (capsel.stages.context.held_for_run), so the select step reuses it too.
"""

from __future__ import annotations

import weakref
from contextlib import contextmanager
from typing import Iterator

import duckdb

from capsel.db import run_sql
from capsel.selection.scoring_key import ScoringKey

# the keys each connection holds pinned now; the rows live in that connection's temp table
_HELD: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, set[tuple]] = weakref.WeakKeyDictionary()


@contextmanager
def pinned_cap_scores(con: duckdb.DuckDBPyConnection, key: ScoringKey | None) -> Iterator[None]:
    """Hold `key`'s CAP scores in `con`'s `cap_scores_pinned` while the block runs (sql/selection/
    cap_scores_pinned.sql reads them); inside an outer pin of the same key, reuse it. None: nothing scored."""
    if key is None:
        yield
        return
    params = {"model_fingerprint": key.model_fingerprint, "config_hash": key.config_hash, **key.layer_params()}
    held = _HELD.setdefault(con, set())
    pin = tuple(params.values())
    if pin in held:
        yield
        return
    run_sql(con, "selection/cap_scores_unpin", params)  # rows an unpin that failed with its transaction left
    run_sql(con, "selection/cap_scores_pin", params)
    held.add(pin)
    try:
        yield
    finally:
        held.discard(pin)
        try:
            run_sql(con, "selection/cap_scores_unpin", params)
        except duckdb.Error:
            pass  # an aborted transaction: the next pin of this key clears the rows first
