"""The output head in slices of the vocabulary (cap_engine.sliced_head): the plain head's logits bit for bit, so the
engine's results with it are the plain head's exactly.

The slices serve a head shape only after one call of that shape gave every bit of the plain product; a shape whose
check disagreed keeps the plain product. Whether MKL's bits agree for a shape is the machine's, so the tests
recompute each verdict independently rather than expect one.
"""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.engine import ScoringEngine
from capsel.cap_engine.inputs import CandidateText
from capsel.cap_engine.sliced_head import head_shapes_checked, sliced_head
from capsel.cap_engine.vocabulary_slices import SLICE_ROWS, in_slices, slices_head
from capsel.models.loading import describe_model, load_model
from capsel_lab.tiny_vlm import build_tiny_vlm
from tests.fixtures.candidates import mixed_candidates
from tests.fixtures.step_capture import scored
from tests.fixtures.stock_cache import load_cache_family
from tests.fixtures.tiny_models import FAMILIES
from tests.fixtures.tiny_vlm_rows import HORIZON, PROMPT_TOKENS, SEEDS, describe_tiny_vlm, vlm_candidates, vlm_images


def assert_identical(plain, sliced) -> None:
    """Every ŷ id, D_ℓ, PPL and exclusion equal to the last bit."""
    for a, b in zip(plain, sliced, strict=True):
        assert b.generation.generated_ids == a.generation.generated_ids
        assert b.divergence == a.divergence


def texts(n: int) -> list[CandidateText]:
    return [CandidateText(**candidate) for candidate in mixed_candidates() if candidate["response"].strip()][:n]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_scores_exactly_as_with_the_plain_head(family, tmp_path):
    loaded = load_cache_family(family, tmp_path / family)
    # The tiny vocabularies fit in one slice, so the automatic rule leaves them plain; here the slices are forced.
    assert not slices_head(loaded)
    plain = scored(replace(loaded, sliced_head=False), texts(8))
    assert head_shapes_checked(loaded) == {}
    forced = replace(loaded, sliced_head=True)
    assert_identical(plain, scored(forced, texts(8)))
    head = loaded.model.get_output_embeddings()
    if head.bias is not None:  # phi's head has a bias, which the slices do not add
        assert not slices_head(forced) and head_shapes_checked(loaded) == {}
        return
    # The greedy steps' batch of 4 and the prompt groups' row counts were each checked once.
    checked = head_shapes_checked(loaded)
    assert any(rows == 4 for rows, _, _ in checked)
    assert all(1 < rows <= 256 for rows, _, _ in checked)


def test_each_shape_is_checked_once_and_a_disagreeing_shape_keeps_the_plain_product(tmp_path):
    loaded = replace(load_cache_family("llama", tmp_path / "llama"), sliced_head=True)
    head = loaded.model.get_output_embeddings()
    threads = torch.get_num_threads()
    torch.manual_seed(0)
    hidden = torch.randn(5, 1, head.in_features)
    with torch.inference_mode(), sliced_head(loaded):
        assert torch.equal(head(hidden), F.linear(hidden, head.weight))
        # the verdict is the machine's: it must be what the two products give when computed independently
        agreed = torch.equal(in_slices(hidden[:, 0], head.weight), F.linear(hidden, head.weight)[:, 0])
        assert head_shapes_checked(loaded) == {(5, True, threads): agreed}
        assert torch.equal(head(hidden * 2), F.linear(hidden * 2, head.weight))
        assert len(head_shapes_checked(loaded)) == 1
        # A NaN never equals itself, so a first call with one makes its shape disagree: later calls of that shape
        # take the plain product.
        broken = torch.randn(3, 1, head.in_features)
        broken[1, 0, 0] = float("nan")
        assert torch.equal(head(broken).nan_to_num(), F.linear(broken, head.weight).nan_to_num())
        assert head_shapes_checked(loaded)[(3, True, threads)] is False
        finite = torch.randn(3, 1, head.in_features)
        assert torch.equal(head(finite), F.linear(finite, head.weight))
        # one row, and a response branch's many rows, stay plain without a check
        head(torch.randn(1, 1, head.in_features))
        head(torch.randn(2, 200, head.in_features))
    assert set(head_shapes_checked(loaded)) == {(5, True, threads), (3, True, threads)}


def plain_call(head, rows: int) -> None:
    with torch.inference_mode():
        head(torch.randn(rows, 1, head.in_features))


def test_outside_a_context_on_another_thread_or_with_gradients_the_head_stays_plain(tmp_path):
    loaded = replace(load_cache_family("llama", tmp_path / "llama"), sliced_head=True)
    head = loaded.model.get_output_embeddings()
    # accelerate's hooks set an instance's own forward: the slices check against it, and it runs every plain call
    calls = []

    def hooked(hidden):
        calls.append(hidden.shape[0])
        return F.linear(hidden, head.weight)

    head.forward = hooked
    with torch.inference_mode():
        with sliced_head(loaded):
            head(torch.randn(4, 1, head.in_features))
            # another thread's call of the same model is not inside this context
            other = threading.Thread(target=plain_call, args=(head, 6))
            other.start()
            other.join()
            with torch.enable_grad():
                head(torch.randn(7, 1, head.in_features))
        head(torch.randn(9, 1, head.in_features))
    assert set(head_shapes_checked(loaded)) == {(4, True, torch.get_num_threads())}
    assert calls == [4, 6, 7, 9]


def test_the_slices_are_the_product_to_float_rounding_across_many_slices():
    torch.manual_seed(0)
    weight = torch.randn(3 * SLICE_ROWS + 100, 64)
    rows = torch.randn(7, 64)
    assert torch.allclose(in_slices(rows, weight), F.linear(rows, weight), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["llava", "gemma3", "qwen2_vl"])
def test_a_vision_language_models_text_head_scores_exactly_as_plain(kind, tmp_path):
    loaded = load_model(describe_tiny_vlm(build_tiny_vlm(tmp_path / kind, kind, seed=SEEDS.get(kind, 0)), kind))
    candidates = [CandidateText(**candidate) for candidate in vlm_candidates(vlm_images(tmp_path))]
    engine = ScoringEngine(replace(loaded, sliced_head=False), ScoringConfig(horizon=HORIZON,
                                                                            prompt_tokens=PROMPT_TOKENS), batch_size=4)
    inputs = engine.prepare(candidates)
    plain = engine.generate_and_score(inputs)
    forced = replace(loaded, sliced_head=True)
    assert slices_head(forced)
    assert_identical(plain, ScoringEngine(forced, engine.config, batch_size=4).generate_and_score(inputs))
    assert any(rows == 4 for rows, _, _ in head_shapes_checked(loaded))


@pytest.mark.slow
def test_real_smollm2_scores_exactly_as_with_the_plain_head(smollm2_instruct_dir):
    loaded = load_model(describe_model(str(smollm2_instruct_dir), dtype="float32", device="cpu"))
    assert slices_head(loaded)  # 49,152 float32 rows on CPU: 24 slices
    candidates = texts(8)
    plain = scored(replace(loaded, sliced_head=False), candidates, batch_size=8)
    assert_identical(plain, scored(loaded, candidates, batch_size=8))
    assert any(rows == 8 for rows, _, _ in head_shapes_checked(loaded))  # the greedy steps' shape was checked
