"""What the store can tell a user about a finished scoring run's results (for CAP: domains lost to empty y-hat)."""

from __future__ import annotations

import duckdb

from capsel.scorers.base import Scorer
from capsel.scoring.format_check import empty_generations, format_warnings
from capsel.store.results import ResultKey


def result_notes(con: duckdb.DuckDBPyConnection, scorer: Scorer, key: ResultKey) -> list[str]:
    """Warnings about the results stored under `key`: the empty-generation check where y-hat is stored."""
    if key.generation_hash is None:
        return []
    return format_warnings(empty_generations(con, key.model_fingerprint, key.generation_hash), scorer.prompt_format)
