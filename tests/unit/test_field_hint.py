"""The --map hint names the whole map to pass again: the pairs that already worked and the fix."""

from __future__ import annotations

from capsel.ingest.field_hint import suggest_map
from capsel.ingest.records import parse_field_map

GSM8K = ["question", "answer"]


def test_a_typo_in_one_pair_keeps_the_other_in_the_suggestion():
    mapped = parse_field_map(["instruction=questoin,response=answer"])  # a misspelt source field
    assert suggest_map(GSM8K, mapped) == "instruction=question,response=answer"


def test_without_a_map_both_fields_are_suggested():
    assert suggest_map(GSM8K, parse_field_map([])) == "instruction=question,response=answer"


def test_a_user_pair_for_another_field_is_kept_and_defaults_are_not_spelled():
    mapped = parse_field_map(["input=context,instruction=q"])
    assert suggest_map(["question", "context", "output"], mapped) == "instruction=question,input=context"


def test_nothing_is_suggested_when_no_field_can_be_fixed():
    assert suggest_map(["text"], parse_field_map(["response=answer"])) is None
    assert suggest_map(["messages"], parse_field_map([])) is None
