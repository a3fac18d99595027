"""Which (method, model, config) a selection reads its scores from: CAP divergences or a baseline's results."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, overload

import duckdb
import orjson

from capsel.cap_engine.config import ScoringConfig
from capsel.db.records import fetch_records
from capsel.errors import CapselError, OptionError
from capsel.methods.registry import DEFAULT_METHOD
from capsel.methods.registry import method as method_named
from capsel.selection.layer_split import LayerSplit, resolve_split

# The CAP macros' bounds when D_early and D_late are read as scoring stored them.
STORED_SPLIT: dict[str, int | None] = {"early_first": None, "early_last": None, "late_first": None, "late_last": None}


@dataclass(frozen=True)
class ScoringKey:
    """One (model fingerprint, config hash) pair with results of `method`, and what the DB knows of it.

    For CAP the pair keys `divergences`; for a baseline it keys its `method_results` rows, and the
    model is the LM, encoder or rater that produced them.
    """

    model_fingerprint: str
    config_hash: str
    method: str = DEFAULT_METHOD
    model_name: str | None = None
    n_scored: int = 0
    n_eligible: int = 0
    model: dict = field(default_factory=dict)
    scoring_config: dict | None = None
    # CAP: the blocks D_early and D_late are re-averaged over (None: as scoring stored them)
    layers: LayerSplit | None = None

    def describe(self) -> str:
        """One line naming the pair for messages."""
        name = f" ({self.model_name})" if self.model_name else ""
        method = "" if self.method == DEFAULT_METHOD else f"{self.method} "
        split = f", {self.layers.describe()}" if self.layers else ""
        return (
            f"{method}model {self.model_fingerprint}{name}, config {self.config_hash}{split}: "
            f"{self.n_scored} scored, {self.n_eligible} eligible"
        )

    def split_read(self) -> LayerSplit | None:
        """CAP: the blocks D_early and D_late average here, the stored split when none was asked for (None when
        the model's depth is not recorded, or for a baseline)."""
        if not method_named(self.method).residualized or self.layers is not None:
            return self.layers
        n_layers = self.model.get("n_layers")
        if not n_layers:
            return None
        try:
            return resolve_split(None, None, int(n_layers), *_stored_fractions(self))
        except OptionError:  # a depth the stored fractions cannot split: nothing this selection read
            return None

    def layer_params(self) -> dict[str, int | None]:
        """The bounds CAP's SQL re-averages the stored profile over (all null: the stored D_early, D_late)."""
        return self.layers.sql_params() if self.layers else dict(STORED_SPLIT)


def layer_params(key: ScoringKey | None) -> dict[str, int | None]:
    """`key.layer_params()`, and the stored split where nothing is scored."""
    return key.layer_params() if key else dict(STORED_SPLIT)


def with_layer_split(
    con: duckdb.DuckDBPyConnection, key: ScoringKey, early: str | None, late: str | None
) -> ScoringKey:
    """`key` reading D_early/D_late over the blocks `early`/`late` name (`capsel select --early/--late`).

    The options are checked against the stored profile's L; a CapselError says so when eligible rows lack it.
    """
    if early is None and late is None:
        return key
    if key.layers is not None and (key.layers.early_option, key.layers.late_option) == (early, late):
        return key
    if not method_named(key.method).residualized:
        raise OptionError("[[early]] and [[late]] re-average CAP's stored layer profile: they apply to cap and "
                          f"random selections, not to {key.method}")
    [profiles] = fetch_records(con, "selection/layer_profiles", {
        "model_fingerprint": key.model_fingerprint, "config_hash": key.config_hash,
    })
    where = f"model {key.model_fingerprint}, config {key.config_hash}"
    if profiles["n_without_profile"]:
        raise CapselError(
            f"{profiles['n_without_profile']} of {profiles['n_eligible']} eligible rows of {where} store no per-layer "
            "profile to re-average D_early and D_late over: score with the split wanted "
            "(`capsel score --early/--late`, a new config) or leave out [[early]] and [[late]]"
        )
    if not profiles["n_eligible"]:
        raise CapselError(f"{where} has no eligible scored row whose profile [[early]] and [[late]] could re-average")
    if profiles["min_layers"] != profiles["max_layers"]:
        raise CapselError(f"the stored profiles of {where} have from {profiles['min_layers']} to "
                          f"{profiles['max_layers']} layers; one model's profiles should all have the same length")
    split = resolve_split(early, late, int(profiles["max_layers"]), *_stored_fractions(key))
    return replace(key, layers=split)


def _stored_fractions(key: ScoringKey) -> tuple[float, float]:
    # a config recorded without the split was scored with the defaults
    defaults = ScoringConfig.model_fields
    config = key.scoring_config or {}
    return float(config.get("early", defaults["early"].default)), float(config.get("late", defaults["late"].default))


def scored_pairs(con: duckdb.DuckDBPyConnection, method: str = DEFAULT_METHOD) -> list[ScoringKey]:
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
    method: str = DEFAULT_METHOD,
) -> ScoringKey | None:
    """Pick the pair of `method` named by `model` (fingerprint or name/path) and `config_hash`, or the only one.

    Returns None only when nothing is scored and `required` is False (an unscored random control).
    """
    pairs = scored_pairs(con, method)
    if not pairs:
        if required or model or config_hash:
            command = method_named(method).command
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

