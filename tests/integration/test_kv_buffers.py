"""The preallocated KV cache gives the logits of transformers' own DynamicCache without regrowing, to float32
rounding (tests/support/float_parity.py: the last bits depend on the CPU's kernels), with the same greedy ids.

Each family runs a left-padded prompt batch, greedy-style steps, a crop back to the prompt and a second
branch, once through capsel's prefill/extend (buffered layers) and once through a stock DynamicCache driven
the same way here.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from transformers.cache_utils import DynamicSlidingWindowLayer

from capsel.cap_engine.forward import extend, prefill
from capsel.cap_engine.kv_buffers import BufferedLayer, BufferedSlidingWindowLayer
from capsel.models.loading import describe_model, load_model
from tests.fixtures.pool import tiny_model_dir
from tests.fixtures.stock_cache import CACHE_FAMILIES, capsel_run, load_cache_family, stock_prompt_logits, stock_run
from tests.support.float_parity import assert_float32_parity

PROMPTS = [[5, 6, 7, 8, 9, 10, 11], [12, 13], [14, 15, 16, 17]]
STEPS = [[20, 21, 22], [23, 24, 25], [26, 27, 28]]
RESPONSES = [[30, 31], [32, 33, 34, 35], [36]]
ROOM = 4


def _buffer_pointers(state) -> dict[int, int]:
    return {index: layer.key_buffer.data_ptr() for index, layer in enumerate(state.cache.layers)
            if isinstance(layer, (BufferedLayer, BufferedSlidingWindowLayer))}


@pytest.mark.parametrize("family", CACHE_FAMILIES)
def test_buffered_cache_gives_the_dynamic_caches_logits(family, tmp_path):
    loaded = load_cache_family(family, tmp_path / family)
    prefilled = []
    with torch.inference_mode():
        stock = stock_run(loaded.model, 0, PROMPTS, STEPS, RESPONSES)
        ours = capsel_run(loaded, PROMPTS, STEPS, RESPONSES, ROOM,
                          on_prefill=lambda state: prefilled.append((state, _buffer_pointers(state))))

    for expected, got in zip(stock, ours, strict=True):
        assert_float32_parity(expected, got)
    state, pointers = prefilled[0]
    assert _buffer_pointers(state) == pointers, "a buffer was reallocated: the batch's capacity was miscounted"
    kinds = {type(layer) for layer in state.cache.layers}
    # A window shorter than prompt + room keeps its sliding layers dynamic; every other layer is buffered.
    if family == "gemma3-window-8":
        assert kinds == {BufferedLayer, DynamicSlidingWindowLayer}
    elif family == "gemma3-window-512":
        assert kinds == {BufferedLayer, BufferedSlidingWindowLayer}
    elif family == "mistral":
        assert kinds == {BufferedSlidingWindowLayer}
    else:
        assert kinds == {BufferedLayer}


def _storage(state) -> set[int]:
    return {layer.key_buffer.untyped_storage().data_ptr() for layer in state.cache.layers}


def test_consecutive_batches_write_into_the_same_pooled_storage(tmp_path):
    loaded = load_model(describe_model(str(tiny_model_dir(tmp_path / "llama", "llama")), dtype="float32",
                                       device="cpu"))
    with torch.inference_mode():
        first = prefill(loaded, PROMPTS, room=ROOM)
        first_storage = _storage(first)
        del first  # the batch is done: its cache hands the pool back
        second = prefill(loaded, PROMPTS[:2], room=ROOM)
        assert _storage(second) == first_storage
        assert_float32_parity(stock_prompt_logits(loaded.model, PROMPTS[:2], 0), second.last_logits)
        del second
        # A wider batch than the pool holds gets larger storage, and keeps it for the batches after it.
        wide = [[5] * 12, [6] * 3]
        third = prefill(loaded, wide, room=ROOM)
        third_storage = _storage(third)
        assert_float32_parity(stock_prompt_logits(loaded.model, wide, 0), third.last_logits)
        del third
        assert _storage(prefill(loaded, PROMPTS, room=ROOM)) == third_storage


def test_a_cache_built_while_another_lives_gets_storage_of_its_own(tmp_path):
    loaded = load_model(describe_model(str(tiny_model_dir(tmp_path / "llama", "llama")), dtype="float32",
                                       device="cpu"))
    column = torch.tensor([[row[0]] for row in STEPS])
    with torch.inference_mode():
        expected = extend(loaded, prefill(loaded, PROMPTS, room=ROOM), column, torch.ones_like(column), keep_last=1)
        first = prefill(loaded, PROMPTS, room=ROOM)
        second = prefill(loaded, [[40, 41, 42, 43, 44, 45, 46], [47], [48, 49]], room=ROOM)
        assert _storage(first).isdisjoint(_storage(second))
        # Had the second batch written into the first one's storage, this step would read its states.
        assert_float32_parity(expected, extend(loaded, first, column, torch.ones_like(column), keep_last=1))


@pytest.mark.parametrize("family", CACHE_FAMILIES)
def test_whole_buffer_attention_gives_the_dynamic_caches_logits(family, tmp_path):
    loaded = replace(load_cache_family(family, tmp_path / family), kv_layout="whole")
    seen = []
    with torch.inference_mode():
        # A wider batch first leaves its states in the pooled storage: the batch after it must not read them.
        capsel_run(loaded, [[50 + i for i in range(9)], [60, 61]], STEPS[:2], RESPONSES[:2], ROOM + 2)
        stock = stock_run(loaded.model, 0, PROMPTS, STEPS, RESPONSES)
        ours = capsel_run(loaded, PROMPTS, STEPS, RESPONSES, ROOM, on_prefill=seen.append)

    for expected, got in zip(stock, ours, strict=True):
        assert_float32_parity(expected, got)
    capacity = max(map(len, PROMPTS)) + ROOM
    buffered = [layer for layer in seen[0].cache.layers if isinstance(layer, (BufferedLayer, BufferedSlidingWindowLayer))]
    # Only gemma3-window-8's sliding layers stay dynamic (its window is shorter than prompt + room).
    assert len(buffered) == len(seen[0].cache.layers) - (2 if family == "gemma3-window-8" else 0)
    for layer in buffered:
        assert layer.whole and layer.key_buffer.is_contiguous() and layer.key_buffer.shape[-2] == capacity
        assert layer.get_mask_sizes(1) == (capacity, 0)


def test_a_whole_buffer_layer_refuses_more_positions_than_it_was_sized_for(tmp_path):
    loaded = replace(load_cache_family("llama", tmp_path / "llama"), kv_layout="whole")
    column = torch.tensor([[row[0]] for row in STEPS])
    with torch.inference_mode():
        state = prefill(loaded, PROMPTS, room=1)
        extend(loaded, state, column, torch.ones_like(column), keep_last=1)
        with pytest.raises(RuntimeError, match="sized for 8 positions was given 9"):
            extend(loaded, state, column, torch.ones_like(column), keep_last=1)
