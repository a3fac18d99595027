"""When most of a file's rows lack a field capsel reads: which fields the file has, and a --map to try."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import duckdb

from capsel.db import run_sql
from capsel.ingest.file_outcome import FileOutcome
from capsel.ingest.inputs import InputFile, open_input
from capsel.ingest.readers import format_for, read_rows
from capsel.ingest.reasons import Reason
from capsel.ingest.records import FieldMap

# Rows a wrong --map or a missing --domain sends to quarantine; a hint is given when they are most rows.
FIELD_REASONS = (Reason.MISSING_INSTRUCTION, Reason.MISSING_RESPONSE, Reason.NO_DOMAIN)
HINT_SHARE = 0.5
SAMPLE_ROWS = 50

# Names public SFT sets use for the fields capsel reads (GSM8K, MATH, HumanEval, Alpaca variants, ...).
USUAL_NAMES: dict[str, tuple[str, ...]] = {
    "instruction": ("problem", "question", "prompt", "query", "instruction", "task", "user", "human"),
    "response": ("solution", "answer", "completion", "output", "response", "canonical_solution", "target",
                 "assistant", "gpt"),
}


@dataclass(frozen=True)
class FieldHint:
    """A file whose rows were mostly quarantined for a missing field, with the fields it does have."""

    path: InputFile
    n_rows: int
    reasons: dict[str, int]
    fields: list[str]
    suggested_map: str | None
    needs_domain: bool

    def message(self) -> str:
        """One paragraph: what went wrong, what the file holds, what to run ([[field]] markers name the options,
        as a flag on the command line and as the parameter in a flow)."""
        missing = ", ".join(f"{count:,} {reason}" for reason, count in self.reasons.items())
        held = ", ".join(self.fields) if self.fields else "no named fields in its first rows"
        advice = []
        if self.suggested_map:
            advice.append(f"[[field_map]] {self.suggested_map}")
        if self.needs_domain:
            advice.append("[[domain]] NAME")
        todo = (f"try {' '.join(advice)} with [[reingest]]" if advice
                else "map them with [[field_map]] instruction=FIELD,response=FIELD and [[reingest]]")
        return f"{self.path}: {missing} of {self.n_rows:,} rows; the file's fields are: {held}; {todo}"


def field_hints(con: duckdb.DuckDBPyConnection, outcomes: Sequence[FileOutcome], fields: FieldMap) -> list[FieldHint]:
    """A hint for each file read in this run whose rows went mostly to quarantine for a missing field."""
    hints = []
    for outcome in outcomes:
        if not outcome.n_quarantined:
            continue
        reasons = dict(run_sql(con, "ingest/ingest_source_reasons", {"source_id": outcome.source_id}).fetchall())
        field_reasons = {str(reason): reasons[reason] for reason in FIELD_REASONS if reason in reasons}
        if sum(field_reasons.values()) < HINT_SHARE * outcome.n_source_rows:
            continue
        found = source_fields(outcome.path)
        hints.append(FieldHint(outcome.path, outcome.n_source_rows, field_reasons, found, suggest_map(found, fields),
                               Reason.NO_DOMAIN in field_reasons))
    return hints


def source_fields(path: InputFile, limit: int = SAMPLE_ROWS) -> list[str]:
    """Field names of the file's first `limit` records, in order of first appearance (an object's are read again
    from storage: its downloaded copy is gone by now, and a hint is rare)."""
    names: dict[str, None] = {}
    with open_input(path) as handle:
        for index, row in enumerate(read_rows(handle, format_for(path), batch_rows=limit)):
            if index >= limit:
                break
            if isinstance(row.value, dict):
                names.update(dict.fromkeys(map(str, row.value)))
    return list(names)


def suggest_map(found: Sequence[str], fields: FieldMap) -> str | None:
    """The whole `--map` to pass again: for each field, the file's field the current map already finds (when the user
    mapped it), else the usual name the file has for it; since a new `--map` replaces the old one, a pair that
    worked is kept rather than dropped."""
    if any(name in found for name in fields.messages):  # chat records: the turns hold both fields
        return None
    by_lower = {name.lower(): name for name in found}
    defaults = FieldMap()
    pairs, fixed = [], False
    for target in FieldMap.__dataclass_fields__:
        mapped = getattr(fields, target)
        working = next((name for name in mapped if name in found), None)
        if working is not None:
            if mapped != getattr(defaults, target):  # the user's own pair: keep it in the new map
                pairs.append(f"{target}={working}")
            continue
        match = next((by_lower[name] for name in USUAL_NAMES.get(target, ()) if name in by_lower), None)
        if match is not None:
            pairs.append(f"{target}={match}")
            fixed = True
    return ",".join(pairs) if fixed else None
