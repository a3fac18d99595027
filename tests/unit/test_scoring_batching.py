"""Length-sorted batches, padding layouts, greedy bookkeeping and vLLM's stop-token handling."""

import torch

from capsel.cap_engine.batching import left_padded, length_sorted_batches, right_padded
from capsel.cap_engine.decoding import GreedyRows
from capsel.cap_engine.vllm_generation import strip_eos


def test_length_sorted_batches_cover_everything_once():
    items = [[0] * n for n in (5, 1, 9, 3, 7, 2, 8)]
    batches = length_sorted_batches(items, 3, len)
    assert [len(batch) for batch in batches] == [3, 3, 1]
    assert [len(item) for batch in batches for item in batch] == [1, 2, 3, 5, 7, 8, 9]


def test_left_padding_puts_every_last_token_in_the_last_column():
    ids, mask = left_padded([[5, 6, 7], [8]], pad_id=0, device=torch.device("cpu"))
    assert ids.tolist() == [[5, 6, 7], [0, 0, 8]]
    assert mask.tolist() == [[1, 1, 1], [0, 0, 1]]


def test_right_padding_to_a_fixed_width():
    ids, mask = right_padded([[5], [], [6, 7]], pad_id=0, device=torch.device("cpu"), width=3)
    assert ids.tolist() == [[5, 0, 0], [0, 0, 0], [6, 7, 0]]
    assert mask.tolist() == [[1, 0, 0], [0, 0, 0], [1, 1, 0]]


def test_greedy_rows_stop_before_eos_and_at_the_horizon():
    rows = GreedyRows(3, horizon=2, eos_ids=frozenset({9}), device=torch.device("cpu"), pad=0)

    def logits(*tokens):
        out = torch.zeros(len(tokens), 10)
        out[torch.arange(len(tokens)), torch.tensor(tokens)] = 1.0
        return out

    rows.advance(logits(9, 4, 4))
    assert rows.tokens == [[], [4], [4]] and rows.running.tolist() == [False, True, True]
    rows.advance(logits(4, 9, 5))
    assert rows.tokens == [[], [4], [4, 5]] and not rows.running.any()
    ids, mask = rows.column(1)
    assert ids.tolist() == [[0], [0], [5]] and mask.tolist() == [[0], [0], [1]]
    rows.advance(logits(6, 6, 6))  # past the horizon every row has stopped: nothing changes
    assert rows.tokens == [[], [4], [4, 5]]


def test_strip_eos_only_drops_a_final_stop_token():
    assert strip_eos([4, 5, 9], frozenset({9})) == [4, 5]
    assert strip_eos([4, 5, 6], frozenset({9})) == [4, 5, 6]
    assert strip_eos([9], frozenset({9})) == []
