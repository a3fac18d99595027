"""Prompts prefilled in length groups and joined give the states of one left-padded forward.

The split itself is checked against every contiguous split of the sorted lengths; the joined cache against
transformers' own DynamicCache fed the whole batch in one forward, on every tiny family, through greedy-style
steps, a crop back to the prompt and a response branch.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
import torch

from capsel.cap_engine.batching import right_padded
from capsel.cap_engine.prefill_groups import GROUP_OVERHEAD, length_groups
from tests.fixtures.stock_cache import CACHE_FAMILIES, capsel_run, load_cache_family, stock_run

# Three short prompts and two long ones: one left-padded forward would pad the short ones to 44.
PROMPTS = [list(range(5, 5 + n)) for n in (40, 3, 44, 6, 5)]
STEPS = [[20 + row, 30 + row] for row in range(len(PROMPTS))]
RESPONSES = [[40, 41], [42, 43, 44, 45], [46], [47, 48, 49], [50, 51]]
ROOM = 4


def _cost(lengths, groups, overhead):
    return sum(len(group) * max(lengths[row] for row in group) + overhead for group in groups)


def _every_split(lengths):
    """Every way to cut the sorted rows into consecutive groups (the naive reference)."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    for cuts in itertools.chain.from_iterable(
            itertools.combinations(range(1, len(order)), k) for k in range(len(order))):
        bounds = [0, *cuts, len(order)]
        yield [order[a:b] for a, b in zip(bounds, bounds[1:])]


@pytest.mark.parametrize("overhead", [0, 5, GROUP_OVERHEAD, 10_000])
@pytest.mark.parametrize("seed", range(6))
def test_length_groups_is_the_cheapest_split(overhead, seed):
    lengths = torch.randint(1, 300, (8,), generator=torch.Generator().manual_seed(seed)).tolist()
    groups = length_groups(lengths, overhead)
    assert sorted(row for group in groups for row in group) == list(range(len(lengths)))
    assert _cost(lengths, groups, overhead) == min(_cost(lengths, split, overhead) for split in _every_split(lengths))
    if overhead == 10_000:
        assert len(groups) == 1


def _prefill_forwards(loaded) -> tuple[int, list[torch.Tensor], list[torch.Tensor]]:
    """The forwards capsel's prefill ran, then stock_run's and capsel_run's outputs."""
    forwards: list[int] = []
    counting = loaded.model.register_forward_pre_hook(lambda *_: forwards.append(1))
    with torch.inference_mode():
        stock = stock_run(loaded.model, 0, PROMPTS, STEPS, RESPONSES)
        forwards.clear()
        ours = capsel_run(loaded, PROMPTS, STEPS, RESPONSES, ROOM, on_prefill=lambda _: counting.remove())
    return len(forwards), stock, ours


@pytest.mark.parametrize("family", CACHE_FAMILIES)
def test_grouped_prefill_gives_one_forwards_logits(family, tmp_path):
    forwards, stock, ours = _prefill_forwards(load_cache_family(family, tmp_path / family))

    # A window shorter than prompt + room drops states a joined cache would need: one forward there.
    expected_groups = 1 if family == "gemma3-window-8" else len(length_groups([len(p) for p in PROMPTS]))
    assert forwards == expected_groups
    assert len(length_groups([len(p) for p in PROMPTS])) == 2, "the prompts must make a split pay"
    response_mask = right_padded(RESPONSES, 0, torch.device("cpu"))[1].bool()
    for expected, got in zip(stock[:-1], ours[:-1]):
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    # The response branch's padded positions are never read; its real ones must match.
    torch.testing.assert_close(ours[-1][response_mask], stock[-1][response_mask], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("wanted, forwards_expected", [(False, 1), (True, 2), (None, 2)])
def test_prefill_groups_can_be_turned_off(wanted, forwards_expected, tmp_path):
    forwards, stock, ours = _prefill_forwards(replace(load_cache_family("llama", tmp_path / "llama"),
                                                      prefill_groups=wanted))
    # None: by device, and this is a CPU
    assert forwards == forwards_expected
    for expected, got in zip(stock[:-1], ours[:-1]):
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
