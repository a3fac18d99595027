"""A small hand-picked file of examples (a LESS target, a held-out evaluation set), read as ingest reads a pool.

Unlike a pool, such a file is fixed rather than quarantined: any unreadable or incomplete row is an error
naming the row.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from capsel.cap_engine.inputs import CandidateText
from capsel.errors import CapselError
from capsel.ingest.readers import format_for, read_rows
from capsel.ingest.reasons import Reason, Rejection
from capsel.ingest.records import FieldMap, Fields, extract_fields

MAX_FIELD_CHARS = 1_000_000


@dataclass(frozen=True)
class Example:
    """One row of an example file: its domain and its text, id'd `<label>:<row>`."""

    domain: str
    text: CandidateText


def read_examples(path: Path, label: str, *, fields: FieldMap = FieldMap(), domain: str | None = None,
                  fallback_domain: str = "all", limit: int | None = None) -> list[Example]:
    """The file's first `limit` examples (all without one), with ingest's readers and `--map` rules.

    `domain` names every row's domain as ingest's `--domain` does; without it a row's domain field is read,
    and a row with none gets `fallback_domain`. `label` names the option in messages ([[target]], [[eval]]).
    """
    examples = []
    with open(path, "rb") as handle:
        for raw in read_rows(handle, format_for(path)):
            found = raw.value if isinstance(raw.value, Rejection) else _fields(raw.value, fields, domain,
                                                                                fallback_domain)
            if isinstance(found, Rejection):
                hint = ("; each row needs an instruction and a response (or messages)"
                        if found.reason.value.startswith(("missing_", "empty_")) else "")
                raise CapselError(f"[[{label}]] {path} row {raw.row}: {found.reason.value} ({found.detail}){hint}")
            if found.images:
                raise CapselError(f"[[{label}]] {path} row {raw.row} holds images; this file must be text only")
            text = CandidateText(f"{label}:{raw.row}", found.instruction, found.input, found.response)
            examples.append(Example(found.domain, text))
            if len(examples) == limit:
                break
    if not examples:
        raise CapselError(f"[[{label}]] {path} holds no examples")
    return examples


def _fields(record: object, fields: FieldMap, domain: str | None, fallback_domain: str) -> Fields | Rejection:
    found = extract_fields(record, fields, domain, MAX_FIELD_CHARS)
    if isinstance(found, Rejection) and found.reason == Reason.NO_DOMAIN and domain is None:
        return extract_fields(record, fields, fallback_domain, MAX_FIELD_CHARS)
    return found
