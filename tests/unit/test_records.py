"""Field mapping and validation of one parsed record."""

import pytest

from capsel.errors import CapselError
from capsel.ingest.reasons import Reason, Rejection
from capsel.ingest.records import FieldMap, Fields, extract_fields, parse_field_map

DEFAULT = FieldMap()


def fields_of(record, domain=None, fields=DEFAULT, max_chars=100):
    return extract_fields(record, fields, domain, max_chars)


def test_parse_field_map_renames_and_rejects_mistakes():
    fields = parse_field_map(["instruction=problem,response=solution", "domain = source"])
    assert fields.instruction == ("problem",)
    assert fields.response == ("solution",)
    assert fields.domain == ("source",)
    assert fields.input == ("input",)
    for bad in (["instruction"], ["prompt=question"], ["instruction=a,instruction=b"], ["=x"]):
        with pytest.raises(CapselError):
            parse_field_map(bad)


def test_mapped_fields_are_read():
    fields = parse_field_map(["instruction=question,response=answer"])
    got = fields_of({"question": "Q", "answer": "A", "instruction": "ignored"}, "sci", fields)
    assert got == Fields("sci", "Q", "", "A")


def test_response_wins_over_output_and_null_counts_as_absent():
    assert fields_of({"instruction": "i", "response": "r", "output": "o"}, "d").response == "r"
    assert fields_of({"instruction": "i", "response": None, "output": "o"}, "d").response == "o"
    assert fields_of({"instruction": "i", "output": "o", "input": None}, "d").input == ""


def test_texts_are_kept_exactly_as_given():
    record = {"instruction": "  Keep\tME ", "input": " x ", "output": " y\n", "domain": " math "}
    assert fields_of(record) == Fields("math", "  Keep\tME ", " x ", " y\n")


def test_domain_option_overrides_the_field():
    assert fields_of({"instruction": "i", "output": "o", "domain": "code"}, "math").domain == "math"


@pytest.mark.parametrize(
    ("record", "reason", "domain"),
    [
        ([1, 2], Reason.NOT_AN_OBJECT, None),
        ({"output": "o", "domain": "d"}, Reason.MISSING_INSTRUCTION, "d"),
        ({"instruction": None, "output": "o", "domain": "d"}, Reason.MISSING_INSTRUCTION, "d"),
        ({"instruction": " \n\t", "output": "o", "domain": "d"}, Reason.EMPTY_INSTRUCTION, "d"),
        ({"instruction": "i", "domain": "d"}, Reason.MISSING_RESPONSE, "d"),
        ({"instruction": "i", "output": "", "domain": "d"}, Reason.EMPTY_RESPONSE, "d"),
        ({"instruction": 3, "output": "o", "domain": "d"}, Reason.NON_STRING_FIELD, "d"),
        ({"instruction": "i", "output": ["o"], "domain": "d"}, Reason.NON_STRING_FIELD, "d"),
        ({"instruction": "i", "input": {"a": 1}, "output": "o", "domain": "d"}, Reason.NON_STRING_FIELD, "d"),
        ({"instruction": "i", "output": "o", "domain": 5}, Reason.NON_STRING_FIELD, None),
        ({"instruction": "x" * 101, "output": "o", "domain": "d"}, Reason.OVERSIZED_FIELD, "d"),
        ({"instruction": "i", "input": "x" * 101, "output": "o", "domain": "d"}, Reason.OVERSIZED_FIELD, "d"),
        ({"instruction": "i", "output": "o"}, Reason.NO_DOMAIN, None),
        ({"instruction": "i", "output": "o", "domain": "  "}, Reason.NO_DOMAIN, None),
        ({"messages": "hi", "domain": "d"}, Reason.INVALID_MESSAGES, "d"),
        ({"messages": ["hi"], "domain": "d"}, Reason.INVALID_MESSAGES, "d"),
        ({"messages": [{"role": "assistant", "content": "a"}], "domain": "d"}, Reason.MISSING_INSTRUCTION, "d"),
        ({"messages": [{"role": "user", "content": "q"}], "domain": "d"}, Reason.MISSING_RESPONSE, "d"),
        ({"messages": [{"role": "user", "content": [{"type": "text"}]},
                       {"role": "assistant", "content": "a"}], "domain": "d"}, Reason.NON_STRING_FIELD, "d"),
    ],
)
def test_rejections(record, reason, domain):
    got = fields_of(record)
    assert isinstance(got, Rejection)
    assert got.reason == reason
    assert got.domain == domain


def test_exactly_max_chars_is_allowed():
    assert isinstance(fields_of({"instruction": "x" * 100, "output": "o"}, "d"), Fields)


def test_chat_records_take_first_user_and_following_assistant_turn():
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "assistant", "content": "ignored: before any user turn"},
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": "second question"},
        {"role": "assistant", "content": "second answer"},
    ]
    assert fields_of({"messages": messages}, "chat") == Fields("chat", "first question", "", "first answer")
    sharegpt = [{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}]
    assert fields_of({"conversations": sharegpt}, "chat") == Fields("chat", "q", "", "a")
