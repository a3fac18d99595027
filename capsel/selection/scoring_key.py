"""Which (method, model, config) a selection reads its scores from: CAP divergences or a baseline's results."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, overload

import duckdb
import orjson

from capsel.db.records import fetch_records
from capsel.errors import CapselError


@dataclass(frozen=True)
class ScoringKey:
    """One (model fingerprint, config hash) pair with results of `method`, and what the DB knows of it.

    For CAP the pair keys `divergences`; for a baseline it keys its `method_results` rows, and the
    model is the LM, encoder or rater that produced them.
    """

    model_fingerprint: str
    config_hash: str
    method: str = "cap"
    model_name: str | None = None
    n_scored: int = 0
    n_eligible: int = 0
    model: dict = field(default_factory=dict)
    scoring_config: dict | None = None

    def describe(self) -> str:
        """One line naming the pair for messages."""
        name = f" ({self.model_name})" if self.model_name else ""
        method = "" if self.method == "cap" else f"{self.method} "
        return (
            f"{method}model {self.model_fingerprint}{name}, config {self.config_hash}: "
            f"{self.n_scored} scored, {self.n_eligible} eligible"
        )


def scored_pairs(con: duckdb.DuckDBPyConnection, method: str = "cap") -> list[ScoringKey]:
    """Every (model, config) pair that has results of `method` (CAP: divergences) in the store."""
    rows = fetch_records(con, "selection/scored_pairs", {"method": method})
    return [
        ScoringKey(
            model_fingerprint=row["model_fingerprint"],
            config_hash=row["config_hash"],
            method=method,
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


@overload
def resolve_scoring_key(
    con: duckdb.DuckDBPyConnection, model: str | None = ..., config_hash: str | None = ...,
    required: Literal[True] = ..., method: str = ...,
) -> ScoringKey: ...


@overload
def resolve_scoring_key(
    con: duckdb.DuckDBPyConnection, model: str | None = ..., config_hash: str | None = ...,
    required: bool = ..., method: str = ...,
) -> ScoringKey | None: ...


def resolve_scoring_key(
    con: duckdb.DuckDBPyConnection,
    model: str | None = None,
    config_hash: str | None = None,
    required: bool = True,
    method: str = "cap",
) -> ScoringKey | None:
    """Pick the pair of `method` named by `model` (fingerprint or name/path) and `config_hash`, or the only one.

    Returns None only when nothing is scored and `required` is False (an unscored random control).
    """
    pairs = scored_pairs(con, method)
    if not pairs:
        if required or model or config_hash:
            command = "capsel score" if method == "cap" else f"capsel score-baseline --method {method}"
            raise CapselError(f"no {method} scores in the database; run `{command}` first")
        return None
    matching = [
        pair for pair in pairs
        if (model is None or _names_model(pair, model))
        and (config_hash is None or pair.config_hash == config_hash)
    ]
    listing = "\n  ".join(pair.describe() for pair in pairs)
    if not matching:
        raise CapselError(
            f"no {method} scores for model {model or 'any'} and config {config_hash or 'any'}; "
            f"scored pairs:\n  {listing}"
        )
    if len(matching) > 1:
        raise CapselError(
            "several (model, config) pairs are scored; choose one with [[model]] and [[config_hash]]:\n  "
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

