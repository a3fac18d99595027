"""`--early/--late` of `capsel select`: the option forms, the blocks they give for L, and what is refused."""

import re

import pytest
from pydantic import ValidationError

from capsel.cap_engine.config import layer_split
from capsel.errors import OptionError
from capsel.selection.layer_split import parse_blocks, resolve_split
from capsel.selection.params import SelectionParams


@pytest.mark.parametrize(
    ("text", "side", "n_layers", "blocks"),
    [
        # the paper's fractions, 1-indexed with floor / ceil: L=32 gives 1..10 and 22..32 (docs/method.md)
        ("0.33", "early", 32, (1, 10)), ("0.66", "late", 32, (22, 32)),
        # read as the decimal typed: 0.66 * 50 is 33 exactly, so block 33 is late
        ("0.66", "late", 50, (33, 50)), (".25", "early", 12, (1, 3)),
        ("last:3", "late", 12, (10, 12)), ("last:1", "late", 30, (30, 30)), ("first:4", "early", 12, (1, 4)),
        ("12-18", "late", 30, (12, 18)), (" 2-2 ", "early", 12, (2, 2)),
    ],
)
def test_each_form_gives_its_blocks(text, side, n_layers, blocks):
    assert parse_blocks(text, side).blocks(n_layers) == blocks


@pytest.mark.parametrize("n_layers", [4, 8, 12, 18, 30, 32, 50])
@pytest.mark.parametrize(("early", "late"), [(0.33, 0.66), (0.25, 0.75), (0.5, 0.51)])
def test_fractions_follow_the_scoring_rule(n_layers, early, late):
    early_layers, late_layers = layer_split(n_layers, early, late)
    assert parse_blocks(repr(early), "early").blocks(n_layers) == (early_layers[0], early_layers[-1])
    assert parse_blocks(repr(late), "late").blocks(n_layers) == (late_layers[0], late_layers[-1])


@pytest.mark.parametrize(
    ("text", "side", "message"),
    [
        ("abc", "late", r"--late 'abc' is not a fraction like 0.66 .*last:K or a range like 12-18"),
        ("1.2", "early", r"--early '1.2' is not a fraction"),
        ("0", "late", r"is not a fraction"), ("1", "late", r"is not a fraction"),
        ("last:0", "late", r"is not a fraction"), ("last:-2", "late", r"is not a fraction"),
        ("first:3", "late", r"--late takes last:K, not 'first:3'"),
        ("last:3", "early", r"--early takes first:K, not 'last:3'"),
        ("12", "late", r"is not a fraction"), ("", "early", r"is not a fraction"),
    ],
)
def test_malformed_options_are_one_line(text, side, message):
    with pytest.raises(OptionError) as caught:
        parse_blocks(text, side)
    shown = caught.value.render(lambda field: f"--{field}")
    assert re.search(message, shown) and "\n" not in shown


@pytest.mark.parametrize(
    ("early", "late", "message"),
    [
        (None, "14-12", r"--late 14-12 names no block of the 12"),
        (None, "last:13", r"--late last:13 gives blocks 0 to 12, outside the stored profile's 1-12"),
        (None, "10-13", r"gives blocks 10 to 13, outside"),
        ("0-2", None, r"--early 0-2 gives blocks 0 to 2, outside"),
        ("first:13", None, r"outside the stored profile's 1-12"),
        ("0.7", None, r"--early 0.7 \(blocks 1-8\) overlaps --late 0.66 \(blocks 8-12\) of 12"),
        ("first:4", "4-12", r"overlaps"),
    ],
)
def test_splits_the_stored_profile_cannot_give_are_refused(early, late, message):
    with pytest.raises(OptionError) as caught:
        resolve_split(early, late, 12, 0.33, 0.66)
    shown = caught.value.render(lambda field: f"--{field}")
    assert re.search(message, shown) and "\n" not in shown


def test_a_side_equal_to_the_stored_split_reads_the_stored_value():
    assert resolve_split(None, None, 12, 0.33, 0.66).sql_params() == dict.fromkeys(
        ("early_first", "early_last", "late_first", "late_last"))
    # 0.66 of 12 is blocks 8..12: the same blocks however they are named
    for late in ("0.66", "8-12", "last:5", "0.6"):
        split = resolve_split("first:3", late, 12, 0.33, 0.66)
        assert split.recomputed == [] and split.late == (8, 12)
    split = resolve_split(None, "last:3", 12, 0.33, 0.66)
    assert split.recomputed == ["late"]
    assert split.sql_params() == {"early_first": None, "early_last": None, "late_first": 10, "late_last": 12}
    assert split.as_dict() == {
        "n_layers": 12, "early": "0.33", "late": "last:3", "early_layers": [1, 3], "late_layers": [10, 12],
        "stored_early_layers": [1, 3], "stored_late_layers": [8, 12], "recomputed": ["late"],
    }
    assert split.describe() == "D_early = blocks 1-3 (0.33), D_late = blocks 10-12 (last:3) of 12"


def test_the_request_and_the_flow_parameters_refuse_a_malformed_option_up_front():
    with pytest.raises(ValidationError, match="last:K"):
        SelectionParams(budget="10", late="last")
    request = SelectionParams(budget="10", late="last:3")
    assert (request.record()["early"], request.record()["late"]) == (None, "last:3")
    with pytest.raises(ValueError, match=r"late 'top' is not a fraction"):
        SelectionParams(late="top")
    assert SelectionParams(early="first:2", late="12-18").record()["late"] == "12-18"
