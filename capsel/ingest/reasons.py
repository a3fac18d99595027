"""The one list of quarantine reasons: why a source row could not become a candidate."""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple


class Reason(StrEnum):
    """Quarantine reason codes, stored in `quarantine.reason`."""

    NOT_JSON = "not_json"
    DUPLICATE_KEY = "duplicate_key"
    NOT_AN_OBJECT = "not_an_object"
    INVALID_UTF8 = "invalid_utf8"
    BAD_CSV_ROW = "bad_csv_row"
    INVALID_MESSAGES = "invalid_messages"
    MISSING_INSTRUCTION = "missing_instruction"
    EMPTY_INSTRUCTION = "empty_instruction"
    MISSING_RESPONSE = "missing_response"
    EMPTY_RESPONSE = "empty_response"
    NON_STRING_FIELD = "non_string_field"
    OVERSIZED_FIELD = "oversized_field"
    NO_DOMAIN = "no_domain"
    IMAGE_MISSING = "image_missing"
    IMAGE_UNREADABLE = "image_unreadable"
    IMAGE_OVERSIZED = "image_oversized"
    IMAGE_PLACEHOLDER_MISMATCH = "image_placeholder_mismatch"
    IMAGE_REFUSED = "image_refused"
    IMAGE_NOT_A_FILE = "image_not_a_file"
    IMAGE_ROW_LIMIT = "image_row_limit"
    UNTERMINATED_QUOTE = "unterminated_quote"
    OVERSIZED_RECORD = "oversized_record"
    OVERSIZED_LINE = "oversized_line"


REASON_HELP: dict[Reason, str] = {
    Reason.NOT_JSON: "the line (JSONL) or document (JSON array) is not valid JSON",
    Reason.DUPLICATE_KEY: "an object names the same key twice; which value was meant is unknown, so none is kept",
    Reason.NOT_AN_OBJECT: "valid JSON, but not an object (e.g. a list, a number or a string)",
    Reason.INVALID_UTF8: "the line or CSV record holds bytes that are not UTF-8",
    Reason.BAD_CSV_ROW: "a CSV record whose field count differs from the header, or that the CSV parser rejects",
    Reason.INVALID_MESSAGES: "`messages`/`conversations` is not a list of turn objects, or a turn's content parts "
    "are not text and image parts",
    Reason.MISSING_INSTRUCTION: "no instruction field (or no user turn in a chat record), or it is null",
    Reason.EMPTY_INSTRUCTION: "the instruction is empty or whitespace only",
    Reason.MISSING_RESPONSE: "no response/output field (or no assistant turn after the first user turn), or it is null",
    Reason.EMPTY_RESPONSE: "the response is empty or whitespace only",
    Reason.NON_STRING_FIELD: "instruction, input, response or domain is not a string",
    Reason.OVERSIZED_FIELD: "instruction, input or response is longer than CAPSEL_MAX_FIELD_CHARS characters",
    Reason.NO_DOMAIN: "no --domain was given and the row has no non-empty `domain` field",
    Reason.IMAGE_MISSING: "an image's file or URL does not exist (or the image entry is null or empty)",
    Reason.IMAGE_UNREADABLE: "an image is not one Pillow can open and verify (or not a path, URL or bytes)",
    Reason.IMAGE_OVERSIZED: "an image is over CAPSEL_MAX_IMAGE_BYTES bytes or CAPSEL_MAX_IMAGE_PIXELS pixels",
    Reason.IMAGE_PLACEHOLDER_MISMATCH: "the text holds <image> placeholders, but not one per image",
    Reason.IMAGE_REFUSED: "an image lies outside the pool file's folder or storage prefix and CAPSEL_IMAGE_ROOTS "
    "(or --image-root), or is a symlink leading out of them, or uses a scheme images are not read from, or an "
    "http(s) host not in CAPSEL_IMAGE_URL_HOSTS; it is never opened",
    Reason.IMAGE_NOT_A_FILE: "an image path names a folder, device, FIFO or socket, not a regular file",
    Reason.IMAGE_ROW_LIMIT: "a row names more than CAPSEL_MAX_IMAGES_PER_ROW images, or its images hold more than "
    "CAPSEL_MAX_ROW_IMAGE_BYTES bytes together",
    Reason.UNTERMINATED_QUOTE: "a CSV record opens a quoted field the file never closes; its first line alone is "
    "quarantined and the lines after it are read as usual",
    Reason.OVERSIZED_RECORD: "a CSV record over the header's fields x CAPSEL_MAX_FIELD_CHARS x 4 bytes, so a field of "
    "it is over the limit; skipped to its end without being held in memory",
    Reason.OVERSIZED_LINE: "a JSONL line or JSON array element over 64 x CAPSEL_MAX_FIELD_CHARS bytes, so longer than "
    "any row whose fields keep to the limit; skipped to its end without being held in memory (its first bytes are "
    "kept here)",
}

# Reasons only rows that carry images can get.
IMAGE_REASONS = frozenset({
    Reason.IMAGE_MISSING, Reason.IMAGE_UNREADABLE, Reason.IMAGE_OVERSIZED, Reason.IMAGE_PLACEHOLDER_MISMATCH,
    Reason.IMAGE_REFUSED, Reason.IMAGE_NOT_A_FILE, Reason.IMAGE_ROW_LIMIT,
})


class Rejection(NamedTuple):
    """A row that cannot be a candidate: the reason, a human detail, and its domain when known."""

    reason: Reason
    detail: str
    domain: str | None = None
