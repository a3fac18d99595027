"""Formulas, not schema: the macros and views capsel's queries read, created anew at every connect.

A formula changes with the code, so it is defined in sql/ (create or replace) rather than frozen in a migration.
A writer replaces the stored definitions; a reader, which may not write, shadows them with temporary ones.
"""

from __future__ import annotations

import duckdb

from capsel.db.sqlfiles import sql_text

# In dependency order: each may read the tables and the definitions above it.
DEFINITIONS = (
    "store/candidates_in_scope",
    "store/results_done",
    "store/candidates_pending",
    "selection/ppl_guarded",
    "selection/cap_pool",
    "selection/cap_domain_fits",
    "selection/cap_scores_at",
    "selection/cap_scores_pinned",
    "selection/cap_views",
    "selection/selection_pool",
    "selection/kcenter_pool",
    "lineage/run_origins",
)


def define(con: duckdb.DuckDBPyConnection, temporary: bool = False) -> None:
    """Create or replace every definition (temporary ones on a read-only connection)."""
    for name in DEFINITIONS:
        text = sql_text(name)
        if temporary:
            text = text.replace("create or replace macro ", "create or replace temp macro ")
            text = text.replace("create or replace view ", "create or replace temp view ")
        con.execute(text)
