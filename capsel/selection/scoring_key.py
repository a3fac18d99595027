"""Which (model, scoring config) pair a selection reads its scores from."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import orjson

from capsel.db.records import fetch_records
from capsel.errors import CapselError


@dataclass(frozen=True)
class ScoringKey:
    """One (model fingerprint, scoring config hash) pair with divergences, and what the DB knows of it."""

    model_fingerprint: str
    config_hash: str
    model_name: str | None = None
    n_scored: int = 0
    n_eligible: int = 0
    model: dict = field(default_factory=dict)
    scoring_config: dict | None = None

    def describe(self) -> str:
        """One line naming the pair for messages."""
        name = f" ({self.model_name})" if self.model_name else ""
        return (
            f"model {self.model_fingerprint}{name}, config {self.config_hash}: "
            f"{self.n_scored} scored, {self.n_eligible} eligible"
        )


def scored_pairs(con: duckdb.DuckDBPyConnection) -> list[ScoringKey]:
    """Every (model, config) pair that has divergences in the store."""
    rows = fetch_records(con, "scored_pairs")
    return [
        ScoringKey(
            model_fingerprint=row["model_fingerprint"],
            config_hash=row["config_hash"],
            model_name=row["model_name"],
            n_scored=int(row["n_scored"]),
            n_eligible=int(row["n_eligible"]),
            model={
                "name_or_path": row["model_name"],
                "revision": row["model_revision"],
                "dtype": row["model_dtype"],
                "architecture": row["model_architecture"],
                "n_layers": row["model_n_layers"],
            },
            scoring_config=None if row["scoring_config"] is None else orjson.loads(row["scoring_config"]),
        )
        for row in rows
    ]


def resolve_scoring_key(
    con: duckdb.DuckDBPyConnection,
    model: str | None = None,
    config_hash: str | None = None,
    required: bool = True,
) -> ScoringKey | None:
    """Pick the pair named by `model` (fingerprint or name/path) and `config_hash`, or the only one.

    Returns None only when nothing is scored and `required` is False (an unscored random control).
    """
    pairs = scored_pairs(con)
    if not pairs:
        if required or model or config_hash:
            raise CapselError("no scored candidates in the database; run `capsel score` first")
        return None
    matching = [
        pair for pair in pairs
        if (model is None or _names_model(pair, model))
        and (config_hash is None or pair.config_hash == config_hash)
    ]
    listing = "\n  ".join(pair.describe() for pair in pairs)
    if not matching:
        raise CapselError(
            f"no scores for model {model or 'any'} and config {config_hash or 'any'}; scored pairs:\n  {listing}"
        )
    if len(matching) > 1:
        raise CapselError(
            "several (model, config) pairs are scored; choose one with --model and --config-hash:\n  "
            + "\n  ".join(pair.describe() for pair in matching)
        )
    return matching[0]


def _names_model(pair: ScoringKey, model: str) -> bool:
    if model in (pair.model_fingerprint, pair.model_name):
        return True
    # a local model may be named by another spelling of the same path
    if pair.model_name is None:
        return False
    return Path(model).expanduser().resolve() == Path(pair.model_name).expanduser().resolve()

