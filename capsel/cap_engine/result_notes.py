"""What a user should know about a finished CAP scoring run's stored results: domains that lost many candidates
to empty y-hat, and domains whose PPL shows the model far off the text's distribution."""

from __future__ import annotations

import duckdb

from capsel.cap_engine.distribution_check import off_distribution_warnings
from capsel.cap_engine.format_check import empty_generations, format_warnings


def result_notes(
    con: duckdb.DuckDBPyConnection, model_fingerprint: str, config_hash: str, generation_hash: str | None,
    prompt_format: str,
) -> list[str]:
    """Warnings about the results of (model, config) where y-hat is stored under `generation_hash` (CAP's); none
    for a method that stores no y-hat."""
    if generation_hash is None:
        return []
    empty = format_warnings(empty_generations(con, model_fingerprint, generation_hash), prompt_format)
    return empty + off_distribution_warnings(con, model_fingerprint, config_hash)
