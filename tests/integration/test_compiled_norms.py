"""A model with its norms and MLPs compiled (LoadedModel.compile_norms_and_mlps) scores as the eager model does.

Compiling fuses each norm's and MLP's elementwise work; a graph break would split a module and leave the kernels
on either side of it unfused, so each test also counts the compiled graphs and the breaks. On CPU inductor's
C++ backend compiles (a few seconds per family); on CUDA the compiled modules are also captured in the greedy
step's graph and replayed.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from capsel.cap_engine import compiled_norms
from capsel.cap_engine.compiled_norms import COMPILED_CLASS_SUFFIXES, compiles
from capsel.cap_engine.inputs import CandidateText
from tests.fixtures.candidates import mixed_candidates
from tests.fixtures.step_capture import assert_same, cuda_llama_scored_as_usual, scored
from tests.fixtures.stock_cache import CACHE_FAMILIES, load_cache_family


@pytest.fixture
def compiled_graphs():
    """torch.compile's counters from a clean start: graphs compiled, and the graph breaks that split them."""
    torch._dynamo.reset()
    counters = torch._dynamo.utils.counters
    counters.clear()
    yield counters
    # The compiled graphs hold the test's model; let them go with it.
    torch._dynamo.reset()


def compiled_classes(model) -> set[str]:
    return {type(module).__name__ for module in model.modules()
            if type(module).__name__.endswith(COMPILED_CLASS_SUFFIXES)}


@pytest.mark.parametrize("family", sorted(CACHE_FAMILIES))
def test_compiled_norms_and_mlps_score_like_the_eager_model(family, tmp_path, compiled_graphs):
    loaded = load_cache_family(family, tmp_path / family)
    # One batch: the compile takes 2 to 6 s on 2 cores.
    texts = [CandidateText(**candidate) for candidate in mixed_candidates() if candidate["response"].strip()][:4]
    usual = scored(loaded, texts)
    assert not compiled_graphs["stats"]
    assert_same(usual, scored(replace(loaded, compile_norms_and_mlps=True), texts))
    # A class's graphs (prompt and response forwards, a one-token step, a per-head norm's other rank) are shared
    # by every layer, and no module broke into pieces.
    assert 0 < compiled_graphs["stats"]["unique_graphs"] <= 3 * len(compiled_classes(loaded.model))
    assert not compiled_graphs["graph_break"]


def test_the_engine_compiles_by_default_a_text_model_on_cuda_where_triton_builds_and_nothing_else(
        tmp_path, monkeypatch):
    loaded = load_cache_family("llama", tmp_path / "llama")
    assert loaded.compile_norms_and_mlps is None and not compiles(loaded)  # on CPU
    # This machine has no GPU and no triton: the probe stands for a GPU machine's, once with a C compiler and once
    # without.
    on_cuda = replace(loaded, input_device=torch.device("cuda"))
    monkeypatch.setattr(compiled_norms, "gpu_kernels_build", lambda: True)
    assert compiles(on_cuda)
    assert not compiles(replace(on_cuda, info=replace(on_cuda.info, processor=object())))  # a vision-language model
    assert not compiles(replace(on_cuda, compile_norms_and_mlps=False))
    assert compiles(replace(loaded, compile_norms_and_mlps=True))
    monkeypatch.setattr(torch._dynamo.config, "disable", True)  # what TORCH_COMPILE_DISABLE=1 sets
    assert not compiles(on_cuda)
    monkeypatch.setattr(torch._dynamo.config, "disable", False)
    monkeypatch.setattr(compiled_norms, "gpu_kernels_build", lambda: False)
    assert not compiles(on_cuda)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_compiled_norms_and_mlps_on_cuda_are_captured_and_score_like_the_eager_model(tmp_path, graph_replays,
                                                                                     compiled_graphs):
    loaded, texts, usual = cuda_llama_scored_as_usual(tmp_path)
    assert_same(usual, scored(replace(loaded, kv_layout="graphed", compile_norms_and_mlps=True), texts))
    assert graph_replays
    assert 0 < compiled_graphs["stats"]["unique_graphs"] <= 3 * len(compiled_classes(loaded.model))
    assert not compiled_graphs["graph_break"]
