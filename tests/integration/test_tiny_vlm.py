"""Tiny random VLMs from configs: deterministic, quick, loaded as VLMs with their text decoder's blocks."""

from __future__ import annotations

import time

import pytest
from PIL import Image
from safetensors.torch import load_file

from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.engine import ScoringEngine
from capsel.cap_engine.inputs import CandidateText
from capsel.cap_engine.multimodal_inputs import content_parts
from capsel.errors import CapselError
from capsel.models.loading import describe_model, load_model
from capsel_lab.tiny_vlm import build_tiny_vlm
from tests.fixtures.pool import tiny_model_dir


@pytest.mark.parametrize("kind", ["llava", "gemma3"])
def test_build_is_deterministic_quick_and_loads_as_a_vlm(kind, tmp_path):
    started = time.perf_counter()
    first = build_tiny_vlm(tmp_path / "a", kind, seed=3)
    elapsed = time.perf_counter() - started
    second = build_tiny_vlm(tmp_path / "b", kind, seed=3)
    assert elapsed < 5.0
    weights, again = load_file(first / "model.safetensors"), load_file(second / "model.safetensors")
    assert weights.keys() == again.keys() and all((weights[k] == again[k]).all() for k in weights)
    info = describe_model(str(first), dtype="float32", device="cpu")
    loaded = load_model(info)
    assert info.is_multimodal and info.tokenizer is info.processor.tokenizer
    assert info.n_layers == 4 and len(loaded.blocks) == 4
    text_blocks = loaded.model.model.language_model.layers
    assert loaded.blocks is text_blocks
    vision_params = {id(p) for p in loaded.model.model.vision_tower.parameters()}
    assert not any(id(p) in vision_params for p in loaded.blocks.parameters())


def test_text_model_keeps_no_processor_and_refuses_images(tmp_path):
    info = describe_model(str(tiny_model_dir(tmp_path / "llama")), dtype="float32", device="cpu")
    assert info.processor is None and not info.is_multimodal
    engine = ScoringEngine(load_model(info), ScoringConfig())
    image = tmp_path / "x.png"
    Image.new("RGB", (8, 8)).save(image)
    with pytest.raises(CapselError, match="vision-language model"):
        engine.prepare([CandidateText("c", "<image> w1 w2", "", "w3 w4 w5 w6 w7 w8", (str(image),))])


def test_content_parts_place_images_at_their_placeholders():
    assert content_parts("<image>\nWhat is <image>?", 2) == [
        {"type": "image"}, {"type": "text", "text": "\nWhat is "}, {"type": "image"}, {"type": "text", "text": "?"},
    ]
    with pytest.raises(CapselError, match="1 <image> placeholders for 2 images"):
        content_parts("one <image> only", 2)
