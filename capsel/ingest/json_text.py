"""One JSON text (a JSONL line or a JSON array element) to its value or a Rejection, the same for both formats.

orjson parses nearly every row. Two things it gets wrong for a pool are fixed here, each only for the rows
that need it, so the common row pays one byte count and a walk over its parsed value (about 1 µs):
- a key named twice in one object is refused (orjson, like the json module, silently keeps the last value,
  which can turn distinct rows into duplicates of one);
- a number beyond a double (a 5,000-digit integer), which orjson refuses, is read by the json module: an
  unused field is no reason to lose the row.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any, Iterable

import orjson

from capsel.ingest.reasons import Reason, Rejection

# Quotes that do not delimit a string are escaped: after one backslash (or three, ...). `\\"` (an escaped
# backslash, then a quote) ends a string.
_QUOTE = b'"'
_ESCAPED_QUOTE = b'\\"'
_ESCAPED_BACKSLASH_QUOTE = b'\\\\"'


class _RepeatedKey(Exception):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def parse_json_text(text: bytes) -> object:
    """The value of one JSON text, or a Rejection: not_json, invalid_utf8 or duplicate_key."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        return _parse_beyond_orjson(text, exc)
    if type(value) is dict and _may_repeat_a_key(text, value):
        return _refusing_repeated_keys(text, value)
    return value


def _may_repeat_a_key(text: bytes, value: dict) -> bool:
    """False when the text provably writes no more strings than the parsed value holds: then no key repeats.

    A repeated key loses at least one string (the key) from the parsed value, and every string written
    costs two quotes; so a text with no more quotes than twice the value's strings (keys included) repeats
    no key. Escaped quotes inside strings are discounted only when the plain count is not enough.
    """
    try:
        n_quotes_needed = 2 * _n_strings(value)
    except RecursionError:  # nesting deeper than Python's limit (orjson allows 1,024 levels): look closer
        return True
    n_quotes = text.count(_QUOTE)
    if n_quotes > n_quotes_needed:
        n_quotes -= text.count(_ESCAPED_QUOTE) - text.count(_ESCAPED_BACKSLASH_QUOTE)
    return n_quotes > n_quotes_needed


def _n_strings(value: Any) -> int:
    """Keys and string values in `value`, nested ones included (the hot path: one pass, no allocation)."""
    children: Iterable[object] = value.values() if type(value) is dict else value
    n = len(value) if type(value) is dict else 0
    for child in children:
        kind = type(child)
        if kind is str:
            n += 1
        elif kind is dict or kind is list:
            n += _n_strings(child)
    return n


def _refusing_repeated_keys(text: bytes, value: dict) -> object:
    """`value`, or a duplicate_key Rejection naming the first key the text repeats in one object."""
    try:
        json.loads(text, object_pairs_hook=_pairs_once)
    except _RepeatedKey as repeated:
        return _repeated(repeated)
    except (ValueError, RecursionError):
        pass  # orjson read it; the json module's deeper recursion is not a reason to lose the row
    return value


def _pairs_once(pairs: list[tuple[str, object]]) -> dict:
    result: dict = {}
    for key, value in pairs:
        if key in result:
            raise _RepeatedKey(key)
        result[key] = value
    return result


def _repeated(repeated: _RepeatedKey) -> Rejection:
    return Rejection(Reason.DUPLICATE_KEY, f"key {repeated.key!r} appears twice in one object")


def _parse_beyond_orjson(text: bytes, exc: orjson.JSONDecodeError) -> object:
    """What orjson refused, read by the json module when it is valid JSON orjson cannot hold; else a Rejection.

    The json module is laxer in two ways the row must not profit from: it accepts NaN and Infinity, and
    lone surrogate escapes ("\\ud800"), which no UTF-8 text can store.
    """
    try:
        value = json.loads(text, object_pairs_hook=_pairs_once, parse_int=_int_of_any_length,
                           parse_constant=_refuse_constant)
    except _RepeatedKey as repeated:
        return _repeated(repeated)
    except (ValueError, RecursionError):
        return _undecodable(text, exc)
    if _has_lone_surrogate(value):
        return Rejection(Reason.NOT_JSON, str(exc))
    return value


def _int_of_any_length(digits: str) -> int | Decimal:
    # int() refuses more than 4,300 digits (Python's guard against slow conversions); Decimal keeps it exact.
    try:
        return int(digits)
    except ValueError:
        return Decimal(digits)


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _has_lone_surrogate(value: object) -> bool:
    """True when a string holds an unpaired surrogate, which UTF-8 (and so the store) cannot hold."""
    try:
        json.dumps(value, ensure_ascii=False, default=str).encode("utf-8")
    except UnicodeEncodeError:
        return True
    except RecursionError:  # as deep as the json module reads, but not as deep as it writes: refuse it
        return True
    return False


def _undecodable(text: bytes, exc: Exception) -> Rejection:
    try:
        text.decode("utf-8")
    except UnicodeDecodeError as bad:
        return Rejection(Reason.INVALID_UTF8, str(bad))
    return Rejection(Reason.NOT_JSON, str(exc))
