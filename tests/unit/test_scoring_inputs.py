"""Prompt text, truncation (last P prompt ids, first R response ids) and exclusion reasons."""

import pytest

from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.inputs import CandidateText, build_inputs, prompt_text
from tests.fixtures.tiny_models import BOS_ID, build_tokenizer


@pytest.mark.parametrize(
    ("instruction", "input_text", "expected"),
    [
        ("  Add.  ", "", "Add."),
        ("Add.", "   ", "Add."),
        ("\nAdd.\n", "  2 + 2 \n", "Add.\n2 + 2"),
        ("", "only input", "\nonly input"),
    ],
)
def test_prompt_text(instruction, input_text, expected):
    assert prompt_text(instruction, input_text) == expected


def _words(start: int, count: int) -> str:
    return " ".join(f"w{i}" for i in range(start, start + count))


def test_truncation_keeps_last_prompt_and_first_response_ids():
    tokenizer = build_tokenizer()
    config = ScoringConfig(prompt_tokens=8, horizon=6)
    [item] = build_inputs([CandidateText("c", _words(0, 20), "", " " + _words(100, 10))], tokenizer, config)
    word_ids = tokenizer(_words(0, 20), add_special_tokens=False).input_ids
    assert item.prompt_ids == word_ids[-8:]  # BOS falls off the front of a long prompt
    assert item.response_ids == tokenizer(_words(100, 6), add_special_tokens=False).input_ids
    assert item.excluded_reason is None


def test_bos_is_kept_on_short_prompts_and_never_added_to_responses():
    tokenizer = build_tokenizer()
    [item] = build_inputs([CandidateText("c", "w1", "w2", _words(10, 6))], tokenizer, ScoringConfig())
    assert item.prompt_ids[0] == BOS_ID and len(item.prompt_ids) == 3
    assert BOS_ID not in item.response_ids and len(item.response_ids) == 6


@pytest.mark.parametrize(
    ("instruction", "response", "reason"),
    [
        ("  ", _words(0, 10), "short_prompt"),        # only BOS: 1 id
        ("w1", _words(0, 10), None),                  # BOS + 1 = 2 ids, the minimum
        ("w1 w2", _words(0, 5), "short_response"),
        ("w1 w2", _words(0, 6), None),
        ("  ", _words(0, 2), "short_prompt"),         # the prompt is checked first
    ],
)
def test_exclusion_reasons(instruction, response, reason):
    [item] = build_inputs([CandidateText("c", instruction, "", response)], build_tokenizer(), ScoringConfig())
    assert item.excluded_reason == reason
