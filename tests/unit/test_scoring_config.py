"""Depth split and configuration hashes of the scoring contract."""

import pytest
from pydantic import ValidationError

from capsel.cap_engine.config import ScoringConfig, layer_split
from capsel.errors import CapselError
from capsel.versioning import config_hash


@pytest.mark.parametrize(
    ("n_layers", "early", "late"),
    [
        (32, range(1, 11), range(22, 33)),   # docs/method.md: L=32 gives 1..10 and 22..32
        (12, range(1, 4), range(8, 13)),     # 3.96 and 7.92
        (50, range(1, 17), range(33, 51)),   # 0.66*50 lands exactly on layer 33
        (100, range(1, 34), range(66, 101)), # both bounds land on integers
        (4, range(1, 2), range(3, 5)),
    ],
)
def test_layer_split_follows_the_contract(n_layers, early, late):
    assert layer_split(n_layers, 0.33, 0.66) == (list(early), list(late))


def test_layer_split_matches_integer_arithmetic_for_every_depth():
    for n_layers in range(4, 161):
        early, late = layer_split(n_layers, 0.33, 0.66)
        assert early == [l for l in range(1, n_layers + 1) if 100 * l <= 33 * n_layers]
        assert late == [l for l in range(1, n_layers + 1) if 100 * l >= 66 * n_layers]


def test_fractions_are_read_as_written_not_as_binary_floats():
    # In binary floating point 0.29 * 100 < 29 and 0.55 * 100 > 55; on paper both are exact.
    assert 0.29 * 100 < 29 and 0.55 * 100 > 55
    assert layer_split(100, 0.29, 0.55) == (list(range(1, 30)), list(range(55, 101)))


def test_too_shallow_model_is_a_clear_error():
    with pytest.raises(CapselError, match="no layer"):
        layer_split(2, 0.33, 0.66)


RAW = {"prompt_format": "raw"}


def test_generation_hash_ignores_the_split_but_scoring_hash_does_not():
    base = ScoringConfig(**RAW)
    split = ScoringConfig(early=0.25, late=0.75, **RAW)
    horizon = ScoringConfig(horizon=24, **RAW)
    assert base.generation_hash == split.generation_hash
    assert base.scoring_hash != split.scoring_hash
    assert base.generation_hash != horizon.generation_hash and base.scoring_hash != horizon.scoring_hash
    assert base.generation_hash != base.scoring_hash
    assert ScoringConfig(**RAW).scoring_hash == base.scoring_hash


def test_raw_configs_keep_the_keys_they_had_before_prompt_formats():
    # The hash of the stored config body as it was written before the prompt_format field existed.
    before = {"kind": "generation", "method_version": 1, "prompt_tokens": 256, "horizon": 48,
              "min_prompt_tokens": 2, "min_response_tokens": 6}
    assert ScoringConfig(**RAW).generation_hash == config_hash(before)
    assert ScoringConfig(**RAW).scoring_hash == config_hash({**before, "kind": "scoring", "early": 0.33, "late": 0.66})


def test_chat_is_part_of_both_hashes_and_auto_cannot_be_hashed():
    raw, chat = ScoringConfig(**RAW), ScoringConfig(prompt_format="chat")
    assert raw.generation_hash != chat.generation_hash and raw.scoring_hash != chat.scoring_hash
    assert chat.generation_config()["prompt_format"] == "chat"
    with pytest.raises(ValueError, match="unresolved"):
        ScoringConfig().scoring_hash


@pytest.mark.parametrize(
    "fields",
    [{"horizon": 4}, {"early": 0.7, "late": 0.6}, {"prompt_tokens": 1}, {"unknown": 1}, {"late": 1.0},
     {"prompt_format": "template"}],
)
def test_inconsistent_configs_are_refused(fields):
    with pytest.raises(ValidationError):
        ScoringConfig(**fields)
