"""The batch-size estimator: config shapes against real caches, Llama-3-8B arithmetic, and the sizing rule."""

from __future__ import annotations

import pytest
import torch
import transformers as tf
from pydantic import ValidationError

from capsel.cap_engine.batch_memory import (
    DEFAULT_BATCH_SIZE,
    HEADROOM,
    IMAGE_POSITIONS_PLANNED,
    MAX_AUTO_BATCH_SIZE,
    ModelShape,
    auto_batch_size,
    batch_fixed_bytes,
    candidate_bytes,
    planned_prompt_positions,
    resolve_batch_size,
)
from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.forward import cache_keyword
from capsel.config import load_settings
from capsel.models.loading import LoadedModel
from tests.fixtures.tiny_models import FAMILIES, build_model


def llama3_8b_config() -> tf.LlamaConfig:
    return tf.LlamaConfig(
        vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
        num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192,
    )


@pytest.mark.parametrize("family", FAMILIES)
def test_shape_from_config_predicts_the_real_cache_and_logits(family):
    model = build_model(family)
    shape = ModelShape.from_config(model.config)
    n_rows, n_tokens = 2, 30
    cache = tf.DynamicCache(config=model.config)
    with torch.no_grad():
        out = model(torch.randint(4, 100, (n_rows, n_tokens)), use_cache=True, output_hidden_states=True,
                    **{cache_keyword(type(model).forward): cache})
    cache_bytes = sum(t.numel() * t.element_size() for layer in cache.layers for t in (layer.keys, layer.values))
    assert cache_bytes == n_rows * shape.kv_bytes(n_tokens, dtype_bytes=4)
    assert shape.vocab == out.logits.shape[-1]
    assert shape.hidden == out.hidden_states[0].shape[-1]
    assert shape.n_layers == len(out.hidden_states) - 1


def test_llama3_8b_candidate_bytes_term_by_term():
    shape = ModelShape.from_config(llama3_8b_config())
    assert (shape.n_kv_heads, shape.head_dim, shape.intermediate) == (8, 128, 14336)
    P, R, b = 256, 48, 2
    kv = 32 * 2 * 8 * 128 * (P + 2 * R) * b           # 46.1 MB
    kept = 2 * 32 * R * 4096 * b                      # 25.2 MB
    activations = P * (4 * 4096 + 3 * 14336) * b      # 30.4 MB
    scores = 2 * 32 * P * (P + 2 * R) * b             # 11.5 MB
    logits = R * 128256 * b                           # 12.3 MB
    assert candidate_bytes(shape, P, R, b) == kv + kept + activations + scores + logits
    # About 126 MB a candidate: ~60 GiB left on an 80 GB H100 after 16 GB of bf16 weights fits 435 rows, planned as
    # 256 (a power of two); an H200's ~125 GiB fits past the cap of 512.
    assert 120e6 < candidate_bytes(shape, P, R, b) < 130e6
    nll_rows = 2 * R * 128256 * 4                     # one row's float32 logits and log-softmax, once per batch
    for free_gib, fitting, planned in ((8, 57, 32), (60, 435, 256), (125, 908, 512)):
        assert fitting == (int(free_gib * 2**30 * HEADROOM) - nll_rows) // candidate_bytes(shape, P, R, b)
        assert auto_batch_size(shape, P, R, b, free_bytes=free_gib * 2**30) == planned


@pytest.mark.parametrize("free_gib", [0.01, 0.5, 2, 8, 32, 200])
def test_auto_batch_fits_the_budget_and_stays_in_bounds(free_gib):
    shape = ModelShape.from_config(llama3_8b_config())
    free = int(free_gib * 2**30)
    batch = auto_batch_size(shape, 256, 48, 2, free, max_batch=MAX_AUTO_BATCH_SIZE)
    per_candidate, fixed = candidate_bytes(shape, 256, 48, 2), batch_fixed_bytes(shape, 48)
    # naive reference: the largest power of two up to the cap whose peak fits, and 1 when none does
    fitting = [n for n in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512) if n * per_candidate + fixed <= HEADROOM * free]
    assert batch == max(fitting, default=1)
    if 1 < batch < MAX_AUTO_BATCH_SIZE:
        assert batch * per_candidate + fixed <= HEADROOM * free < (2 * batch) * per_candidate + fixed
    bigger = auto_batch_size(shape, 256, 48, 2, 2 * free, max_batch=MAX_AUTO_BATCH_SIZE)
    assert bigger >= batch


def test_resolve_batch_size_keeps_numbers_and_is_the_default_on_cpu():
    model = build_model("llama")
    loaded = LoadedModel(info=None, model=model, blocks=model.model.layers, input_device=torch.device("cpu"))
    assert resolve_batch_size(7, loaded, ScoringConfig()) == 7
    assert resolve_batch_size("auto", loaded, ScoringConfig()) == DEFAULT_BATCH_SIZE


@pytest.mark.parametrize("value,expected", [("auto", "auto"), ("12", 12), (12, 12)])
def test_batch_size_setting_takes_a_number_or_auto(value, expected):
    assert load_settings(score_batch_size=value).score_batch_size == expected


@pytest.mark.parametrize("value", ["0", "-3", "big", "Auto "])
def test_batch_size_setting_refuses_anything_else(value):
    with pytest.raises(ValidationError):
        load_settings(score_batch_size=value)


def test_a_vlm_is_sized_for_its_pictures_positions_as_well_as_p():
    """VLM prompts share batches, and their picture tokens lie past P: the plan counts them, so fewer fit."""
    config = ScoringConfig()
    text, vlm = planned_prompt_positions(config, False), planned_prompt_positions(config, True)
    assert text == config.prompt_tokens and vlm == config.prompt_tokens + IMAGE_POSITIONS_PLANNED
    shape = ModelShape(n_layers=32, hidden=4096, intermediate=11008, n_heads=32, n_kv_heads=32, head_dim=128,
                       vocab=32064)
    free = 60 * 2**30
    assert auto_batch_size(shape, vlm, 48, 2, free) < auto_batch_size(shape, text, 48, 2, free)
    # four 576-token pictures, P and 2R of cache per candidate, in bf16: what the plan keeps room for
    assert candidate_bytes(shape, vlm, 48, 2) >= shape.kv_bytes(4 * 576 + 256 + 96, 2)
