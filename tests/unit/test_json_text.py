"""One JSON text to a value or a Rejection: repeated keys refused, huge numbers kept, orjson's strictness kept."""

import json
import random
from decimal import Decimal

import orjson
import pytest

from capsel.ingest.json_text import parse_json_text
from capsel.ingest.reasons import Reason, Rejection


def reference(text: bytes) -> object:
    """The json module's reading, with a repeated key anywhere reported as the string 'repeated'."""

    def pairs(items):
        if len({key for key, _ in items}) < len(items):
            raise KeyError("repeated")
        return dict(items)

    try:
        return json.loads(text, object_pairs_hook=pairs)
    except KeyError:
        return "repeated"


@pytest.mark.parametrize("text", [
    b'{"instruction": "a", "output": "x", "instruction": "b"}',
    b'{"instruction" : "a", "instruction" :"b"}',  # whitespace before the colon
    b'{"messages": [{"role": "user", "content": "q", "content": "r"}]}',  # nested
    b'{"a\\\\": 1, "a\\\\": 2}',  # a key ending in an escaped backslash
    b'{"x": "say \\"hi\\"", "k": 1, "k": 1}',  # an escaped quote in text does not hide it
    b'{"k": {}, "k": {}}',
])
def test_a_repeated_key_is_quarantined_with_its_name(text):
    rejection = parse_json_text(text)
    assert isinstance(rejection, Rejection) and rejection.reason == Reason.DUPLICATE_KEY
    assert "appears twice" in rejection.detail


@pytest.mark.parametrize("text", [
    b'{"instruction": "write {\\"a\\": 1, \\"a\\": 2} as JSON", "output": "x"}',  # repeated keys inside text
    b'{"a": "\\\\\\"", "b": "\\\\"}',
    b'{"a": {"a": {"a": 1}}, "b": [{"a": 1}, {"a": 2}]}',  # the same name in different objects
    b'{}',
])
def test_text_that_only_looks_like_repeated_keys_is_read(text):
    assert parse_json_text(text) == orjson.loads(text)


def random_text(rng: random.Random, depth: int = 0) -> str:
    """A JSON object as text, its keys drawn from a few names (so some repeat) and its strings full of quotes,
    backslashes, colons and whitespace."""
    def string() -> str:
        return json.dumps("".join(rng.choice(['"', "\\", ":", " ", "a", "b", '":', "é"]) for _ in range(rng.randint(0, 6))))

    def value(level: int) -> str:
        kind = rng.randrange(5 if level < 3 else 3)
        if kind == 0:
            return string()
        if kind == 1:
            return str(rng.randint(-9, 9))
        if kind == 2:
            return "null"
        if kind == 3:
            return "[" + ", ".join(value(level + 1) for _ in range(rng.randint(0, 3))) + "]"
        return obj(level + 1)

    def obj(level: int) -> str:
        pairs = [f"{rng.choice(['a', 'b', 'c', 'd', 'e', 'f', 'g'])}" for _ in range(rng.randint(0, 4))]
        colon = rng.choice([":", " : ", ":\t"])
        return "{" + ", ".join(f'"{key}"{colon}{value(level)}' for key in pairs) + "}"

    return obj(depth)


def test_repeated_keys_are_found_exactly_where_the_json_module_finds_them():
    rng = random.Random(19)
    n_repeated = 0
    for _ in range(5000):
        text = random_text(rng).encode()
        expected = reference(text)
        got = parse_json_text(text)
        if expected == "repeated":
            n_repeated += 1
            assert isinstance(got, Rejection) and got.reason == Reason.DUPLICATE_KEY, text
        else:
            assert got == expected, text
    assert 500 < n_repeated < 4500  # both kinds were really drawn


def test_a_number_beyond_a_double_is_read_exactly_not_rejected():
    digits = "1" + "0" * 5000
    row = parse_json_text(f'{{"instruction": "q", "output": "a", "id": {digits}, "neg": -{digits}}}'.encode())
    assert isinstance(row, dict) and row["instruction"] == "q"
    assert row["id"] == Decimal(digits) and row["neg"] == -Decimal(digits)
    assert parse_json_text(b'{"x": 1e400}') == {"x": float("inf")}
    assert parse_json_text(b'{"x": 12}') == {"x": 12}  # ordinary numbers stay ints


@pytest.mark.parametrize(("text", "reason"), [
    (b'{"a": "\\ud800"}', Reason.NOT_JSON),  # a lone surrogate: no UTF-8 text holds it
    (b'{"a": NaN}', Reason.NOT_JSON),
    (b'{"a": -Infinity, "b": ' + b"9" * 5000 + b"}", Reason.NOT_JSON),  # the big number does not open the door
    (b'{"a": "caf\xe9"}', Reason.INVALID_UTF8),
    (b'{"a": ', Reason.NOT_JSON),
    (b"[" * 100_000, Reason.NOT_JSON),
])
def test_what_orjson_refuses_stays_refused(text, reason):
    rejection = parse_json_text(text)
    assert isinstance(rejection, Rejection) and rejection.reason == reason


def test_a_valid_surrogate_pair_is_kept():
    assert parse_json_text(b'{"a": "\\ud83d\\ude00"}') == {"a": "\U0001F600"}
