"""Turn one parsed source record into candidate fields, or a quarantine reason."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, NamedTuple

from capsel.errors import OptionError
from capsel.ingest.image_refs import content_parts, field_images, turn_images
from capsel.ingest.reasons import Reason, Rejection

USER_ROLES = frozenset({"user", "human"})
ASSISTANT_ROLES = frozenset({"assistant", "gpt", "model"})


@dataclass(frozen=True)
class FieldMap:
    """Source field names read for each candidate field, first non-null one wins.

    `response` is looked up before `output`: a record carrying both keeps `response`.
    """

    instruction: tuple[str, ...] = ("instruction",)
    input: tuple[str, ...] = ("input",)
    response: tuple[str, ...] = ("response", "output")
    domain: tuple[str, ...] = ("domain",)
    messages: tuple[str, ...] = ("messages", "conversations")
    images: tuple[str, ...] = ("images", "image")

    def as_dict(self) -> dict[str, list[str]]:
        """JSON-ready form, stored with the source row for lineage."""
        return {name: list(getattr(self, name)) for name in self.__dataclass_fields__}


def parse_field_map(specs: Iterable[str]) -> FieldMap:
    """Parse `--map` values such as 'instruction=problem,response=solution' into a FieldMap."""
    fields = FieldMap()
    seen: set[str] = set()
    for spec in specs:
        for pair in filter(None, (part.strip() for part in spec.split(","))):
            target, sep, source = (item.strip() for item in pair.partition("="))
            if not sep or not target or not source:
                raise OptionError(f"[[field_map]] expects capsel_field=source_field pairs, got {pair!r}")
            if target not in FieldMap.__dataclass_fields__:
                known = ", ".join(FieldMap.__dataclass_fields__)
                raise OptionError(f"[[field_map]]: unknown capsel field {target!r}; choose from {known}")
            if target in seen:
                raise OptionError(f"[[field_map]]: {target!r} is mapped twice")
            seen.add(target)
            fields = replace(fields, **{target: (source,)})
    return fields


class Fields(NamedTuple):
    """The candidate fields of a valid record, exactly as the source gave them (a chat turn's content parts
    joined), and its image references: None for a row with no image field and no image parts."""

    domain: str
    instruction: str
    input: str
    response: str
    images: tuple[object, ...] | None = None


def _first_present(record: dict, names: tuple[str, ...]) -> object:
    for name in names:
        value = record.get(name)
        if value is not None:
            return value
    return None


def _check_text(
    name: str, value: object, missing: Reason | None, empty: Reason | None, max_chars: int
) -> Rejection | None:
    """Why `value` cannot be the text field `name`, or None when it can."""
    if isinstance(value, str):
        # isspace() is False for '', so this is `not value.strip()` without building a copy.
        if empty is not None and (not value or value.isspace()):
            return Rejection(empty, f"{name} is empty")
        if len(value) > max_chars:
            return Rejection(Reason.OVERSIZED_FIELD, f"{name} has {len(value):,} chars (max {max_chars:,})")
        return None
    if value is None:
        return Rejection(missing, f"{name} is missing") if missing else None
    return Rejection(Reason.NON_STRING_FIELD, f"{name} is {type(value).__name__}, not a string")


def _chat_turns(
    turns: object, field: tuple[object, ...] | None
) -> tuple[object, object, tuple[object, ...] | None] | Rejection:
    """First user turn, the first assistant turn after it and the row's images, from a messages/conversations list
    (`field`: the row's image field, which image parts without an image of their own stand for)."""
    if not isinstance(turns, list):
        return Rejection(Reason.INVALID_MESSAGES, f"messages is {type(turns).__name__}, not a list")
    user = None
    for turn in turns:
        if not isinstance(turn, dict):
            return Rejection(Reason.INVALID_MESSAGES, f"a turn is {type(turn).__name__}, not an object")
        role = turn.get("role", turn.get("from"))
        content = turn.get("content", turn.get("value"))
        if user is None and role in USER_ROLES:
            user = content
        elif user is not None and role in ASSISTANT_ROLES:
            return _with_parts(user, content, field)
    return _with_parts(user, None, field)


def _with_parts(
    user: object, assistant: object, field: tuple[object, ...] | None
) -> tuple[object, object, tuple[object, ...] | None] | Rejection:
    """The turns' texts with content-part lists joined, and the row's images (the user turn's image parts)."""
    images = field
    if isinstance(user, list):
        parts = content_parts(user, "user")
        if isinstance(parts, Rejection):
            return parts
        user = parts.text
        if parts.images:
            found = turn_images(parts.images, field)
            if isinstance(found, Rejection):
                return found
            images = found
    if isinstance(assistant, list):
        parts = content_parts(assistant, "assistant")
        if isinstance(parts, Rejection):
            return parts
        if parts.images:
            return Rejection(Reason.INVALID_MESSAGES, "the assistant turn holds an image; images are read from "
                                                      "the user turn")
        assistant = parts.text
    return user, assistant, images


def _domain(record: dict, fields: FieldMap, domain_option: str | None) -> str | Rejection:
    if domain_option:
        return domain_option
    value = _first_present(record, fields.domain)
    if value is None:
        return Rejection(Reason.NO_DOMAIN, "no --domain and no domain field")
    if not isinstance(value, str):
        return Rejection(Reason.NON_STRING_FIELD, f"domain is {type(value).__name__}, not a string")
    if not value.strip():
        return Rejection(Reason.NO_DOMAIN, "domain field is empty")
    return value.strip()


def extract_fields(
    record: object, fields: FieldMap, domain_option: str | None, max_chars: int
) -> Fields | Rejection:
    """Candidate fields of a parsed record, or the first reason it cannot be one.

    Content is checked before the domain, so a row with no domain and no instruction is
    quarantined as missing_instruction; its domain is '(none)' in the summary either way.
    """
    if not isinstance(record, dict):
        return Rejection(Reason.NOT_AN_OBJECT, f"got {type(record).__name__}, not an object", domain_option)
    domain = _domain(record, fields, domain_option)
    known_domain = domain if isinstance(domain, str) else None
    instruction = _first_present(record, fields.instruction)
    input_text = _first_present(record, fields.input)
    response = _first_present(record, fields.response)
    images = None
    for name in fields.images:  # inline, not _first_present: every text-only row passes here
        if (image_field := record.get(name)) is not None:
            images = field_images(image_field)
            break
    if instruction is None and response is None:
        turns = _first_present(record, fields.messages)
        if turns is not None:
            chat = _chat_turns(turns, images)
            if isinstance(chat, Rejection):
                return chat._replace(domain=known_domain)
            instruction, response, images = chat
    problem = (
        _check_text("instruction", instruction, Reason.MISSING_INSTRUCTION, Reason.EMPTY_INSTRUCTION, max_chars)
        or _check_text("response", response, Reason.MISSING_RESPONSE, Reason.EMPTY_RESPONSE, max_chars)
        or _check_text("input", input_text, None, None, max_chars)
    )
    if problem is not None:
        return problem._replace(domain=known_domain)
    if not isinstance(domain, str):
        return domain
    # _check_text has checked all three are strings
    return Fields(domain, str(instruction), str(input_text or ""), str(response), images)
