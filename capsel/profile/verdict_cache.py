"""The rank-profile verdict kept in the database per model: the flows survey a model once and read it after."""

from __future__ import annotations

import dataclasses
import math
from datetime import datetime
from typing import Any, Callable

import duckdb
import orjson

from capsel.db.sqlfiles import first_row, run_sql
from capsel.models.source import ModelSource
from capsel.profile.verdict import DEFAULT_MARGIN, Verdict
from capsel.versioning import config_hash

# Bump when the survey (its texts, token budget or test) changes what a verdict says: kept ones then miss.
SURVEY_VERSION = 1


@dataclasses.dataclass(frozen=True)
class KeptVerdict:
    """A model's verdict and when its survey ran: None for a survey this run made."""

    verdict: Verdict
    surveyed_at: datetime | None


def profile_key(source: ModelSource, prompt_format: str) -> str:
    """What a verdict depends on: the model's files (weights, config, tokenizer, chat template) and format."""
    return config_hash({"files": source.files, "prompt_format": prompt_format, "survey": SURVEY_VERSION,
                        "margin": DEFAULT_MARGIN})


def remembered_verdict(con: duckdb.DuckDBPyConnection, key: str, model_name: str, prompt_format: str,
                       survey: Callable[[], Verdict]) -> KeptVerdict:
    """The verdict kept under `key`, else `survey()`'s, kept for the next run (a verdict another process kept
    meanwhile stays). A survey's error is raised and nothing is kept."""
    row = first_row(con, "profile/rank_profile_get", {"profile_key": key})
    if row is not None:
        # JSON has no NaN: a peak the trough has no side for was kept as null
        fields: dict[str, Any] = {name: math.nan if value is None else value
                                  for name, value in orjson.loads(row[0]).items()}
        return KeptVerdict(Verdict(**fields), row[1])
    verdict = survey()
    run_sql(con, "profile/rank_profile_put", {
        "profile_key": key, "model_name": model_name, "prompt_format": prompt_format, "present": verdict.present,
        "verdict": orjson.dumps(dataclasses.asdict(verdict)).decode(),
    })
    return KeptVerdict(verdict, None)
