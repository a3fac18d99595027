"""What a selection run says of its model's hidden-state U-shape, surveying a model once per database.

The paper ties CAP's signal to the U-shape over depth; without it the ranks deserve doubt, but the user asked for a
selection, so a run warns and goes on. The survey reloads and runs the model, which cost most of a short run's
time, so its verdict is kept per model files and format (verdict_cache) and read by every later run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import duckdb

from capsel.errors import CapselError
from capsel.models.source import ModelSource
from capsel.profile.verdict import Verdict
from capsel.profile.verdict_cache import profile_key, remembered_verdict


@dataclass(frozen=True)
class RunNote:
    """A line for the run's report; `warn` says it is a warning (no U-shape) rather than information."""

    text: str
    warn: bool = False


def u_shape_notes(con: duckdb.DuckDBPyConnection, source: ModelSource, model_name: str, prompt_format: str,
                  survey: Callable[[], Verdict]) -> list[RunNote]:
    """The kept verdict for these model files, else `survey()`'s (kept for the next run), as the run's notes: the
    kept verdict's date, a survey that could not judge (e.g. too few blocks; scoring still runs), and the warning
    when the U-shape is absent."""
    try:
        kept = remembered_verdict(con, profile_key(source, prompt_format), model_name, prompt_format, survey)
    except CapselError as error:
        return [RunNote(f"rank profile not checked: {error}")]
    verdict, notes = kept.verdict, []
    if kept.surveyed_at is not None:
        notes.append(RunNote(f"rank profile: the verdict of {kept.surveyed_at:%Y-%m-%d %H:%M} for these model files "
                             f"(U-shape {'present' if verdict.present else 'absent'})"))
    if not verdict.present:
        notes.append(RunNote(f"rank profile: the model's hidden states show no U-shape over depth ({verdict.reason}); "
                             "CAP's ranks rest on that pattern, so check them (capsel profile --model ...)", warn=True))
    return notes
