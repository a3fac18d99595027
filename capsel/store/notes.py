"""What the store can tell a user about a finished scoring run's results (for CAP: empty y-hat, off-distribution)."""

from __future__ import annotations

import duckdb

from capsel.cap_engine.distribution_check import off_distribution_warnings
from capsel.cap_engine.format_check import empty_generations, format_warnings
from capsel.scorers.base import Scorer
from capsel.store.results import ResultKey


def result_notes(con: duckdb.DuckDBPyConnection, scorer: Scorer, key: ResultKey) -> list[str]:
    """Warnings about the results stored under `key` where y-hat is stored (CAP): domains lost to empty
    generations, and domains whose PPL shows the model far off the text's distribution."""
    if key.generation_hash is None:
        return []
    empty = format_warnings(empty_generations(con, key.model_fingerprint, key.generation_hash), scorer.prompt_format)
    return empty + off_distribution_warnings(con, key.model_fingerprint, key.config_hash)
