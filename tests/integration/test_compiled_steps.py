"""The static greedy step compiled (LoadedModel.compile_steps) gives what the eager step gives, as one graph.

Compiling fuses the step's small elementwise kernels; a graph break would split the step and leave the kernels
on either side of it unfused, so each test also counts the compiled graphs and the breaks. On CPU inductor's
C++ backend compiles (a few seconds per family); on CUDA the compiled step is also captured and replayed.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from capsel.cap_engine.inputs import CandidateText
from tests.fixtures.candidates import mixed_candidates
from tests.fixtures.step_capture import UNCAPTURED, assert_same, cuda_llama_scored_as_usual, scored
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


@pytest.mark.parametrize("family", sorted(set(CACHE_FAMILIES) - UNCAPTURED))
def test_compiled_static_steps_score_like_the_usual_steps(family, tmp_path, fed_steps, compiled_graphs):
    loaded = load_cache_family(family, tmp_path / family)
    # One batch, so one shape: the compile takes 5 to 20 s on 2 cores.
    texts = [CandidateText(**candidate) for candidate in mixed_candidates() if candidate["response"].strip()][:4]
    usual = scored(loaded, texts)
    assert not compiled_graphs["stats"]
    assert_same(usual, scored(replace(loaded, kv_layout="graphed", compile_steps=True), texts))
    assert fed_steps
    # The step became one compiled graph, with no break, and every step after the first ran it.
    assert compiled_graphs["stats"]["unique_graphs"] == 1
    assert not compiled_graphs["graph_break"]
    assert compiled_graphs["stats"]["calls_captured"] > 0


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_compiled_steps_on_cuda_are_captured_and_score_like_the_usual_steps(tmp_path, graph_replays,
                                                                            compiled_graphs):
    loaded, texts, usual = cuda_llama_scored_as_usual(tmp_path)
    assert_same(usual, scored(replace(loaded, kv_layout="graphed", compile_steps=True), texts))
    assert graph_replays
    assert compiled_graphs["stats"]["unique_graphs"] >= 1
    assert not compiled_graphs["graph_break"]
