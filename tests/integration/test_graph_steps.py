"""ŷ's greedy steps run as one static step (graph_steps, layout "graphed") give what the usual steps give.

On CPU the static step runs eagerly at every step: the tokens, positions, boolean mask over the whole KV buffer,
device-side write position and block-output slots are all in play, and only the capture itself is not. Every
tiny family runs the whole engine both ways; the CUDA case also captures the graph and replays it. What a
capture forbids, an operator whose result the host must wait for, is looked for in the step's operators here.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from capsel.cap_engine import graph_steps
from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.divergence import BlockStates
from capsel.cap_engine.engine import ScoringEngine
from capsel.cap_engine.forward import CAPACITY_STEP, kv_layout
from capsel.cap_engine.generation import HFGenerator
from capsel.cap_engine.inputs import CandidateText
from capsel.models.loading import describe_model, load_model
from capsel_lab.tiny_vlm import build_tiny_vlm
from tests.fixtures.candidates import mixed_candidates
from tests.fixtures.pool import tiny_model_dir
from tests.fixtures.step_capture import UNCAPTURED, assert_same, cuda_llama_scored_as_usual, scored
from tests.fixtures.stock_cache import CACHE_FAMILIES, load_cache_family
from tests.fixtures.tiny_models import WORDS
from tests.fixtures.tiny_vlm_rows import HORIZON, PROMPT_TOKENS, SEEDS, describe_tiny_vlm, vlm_candidates, vlm_images

# Operators that make the host wait for the device (a value read back, or a result whose size depends on the
# data) or copy host data to the device: inside a CUDA graph capture each is an error or a stale constant.
HOST_WAITS = {"_local_scalar_dense", "item", "nonzero", "is_nonzero", "masked_select", "equal", "_unique2",
              "unique_dim", "unique_consecutive", "lift_fresh", "lift_fresh_copy"}


class OperatorNames(TorchDispatchMode):
    """Records the name of every aten operator run while active."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.add(func.__name__.split(".")[0])
        return func(*args, **(kwargs or {}))


@pytest.fixture
def step_graphs_made_and_bound(monkeypatch) -> tuple[list[int], list[int]]:
    """One entry per StepGraph made, and one per batch a StepGraph was bound to (the first included)."""
    made: list[int] = []
    bound: list[int] = []
    init, bind = graph_steps.StepGraph.__init__, graph_steps.StepGraph.bind
    monkeypatch.setattr(graph_steps.StepGraph, "__init__", lambda self, *args: (made.append(1), init(self, *args))[1])
    monkeypatch.setattr(graph_steps.StepGraph, "bind", lambda self, *args: (bound.append(1), bind(self, *args))[1])
    return made, bound


@pytest.mark.parametrize("family", CACHE_FAMILIES)
def test_static_steps_score_like_the_usual_steps(family, tmp_path, fed_steps):
    loaded = load_cache_family(family, tmp_path / family)
    texts = [CandidateText(**candidate) for candidate in mixed_candidates()]
    usual = scored(loaded, texts)
    assert not fed_steps
    static = scored(replace(loaded, kv_layout="graphed"), texts)
    assert_same(usual, static)
    if family in UNCAPTURED:
        assert not fed_steps
    else:
        # every batch decodes: at least one step per batch of 4 (the horizon caps a batch at 24)
        assert len(fed_steps) >= len(texts) // 4


def test_static_steps_generate_like_the_usual_steps(tmp_path, fed_steps):
    loaded = load_model(describe_model(str(tiny_model_dir(tmp_path / "qwen3", "qwen3")), dtype="float32",
                                       device="cpu"))
    prompts = [[5, 6, 7, 8, 9, 10, 11], [12, 13], [14, 15, 16, 17], [18]]
    with torch.inference_mode():
        usual = HFGenerator(loaded, 16, 4).generate(prompts)
        static = HFGenerator(replace(loaded, kv_layout="graphed"), 16, 4).generate(prompts)
    assert static == usual
    assert fed_steps


@pytest.mark.parametrize("family", sorted(set(CACHE_FAMILIES) - UNCAPTURED))
def test_the_captured_step_has_no_operator_the_host_waits_for(family, tmp_path, monkeypatch):
    recorded = OperatorNames()
    forward = graph_steps.StepGraph._forward

    def watched(self):
        with recorded:
            return forward(self)

    monkeypatch.setattr(graph_steps.StepGraph, "_forward", watched)
    loaded = replace(load_cache_family(family, tmp_path / family), kv_layout="graphed")
    scored(loaded, [CandidateText(**candidate) for candidate in mixed_candidates()][:8])
    assert {"scaled_dot_product_attention", "index_copy_"} <= recorded.names  # the step ran, and wrote in place
    assert not recorded.names & HOST_WAITS


def _near_widths() -> list[CandidateText]:
    """Eight candidates whose prompts differ by a word or two: batches of two that share a KV capacity."""
    return [CandidateText(f"n{index}", " ".join(WORDS[(index + k) % len(WORDS)] for k in range(20 + index)), "",
                          " " + " ".join(WORDS[(3 * index + k) % len(WORDS)] for k in range(6 + 2 * index)) + "\n")
            for index in range(8)]


class StepTrace(TorchDispatchMode):
    """Every aten operator of one step: its name, its constants, and each tensor argument's shape and layout,
    with the address of every tensor the step did not make itself (weights, static inputs, KV buffers, slots).

    Two steps that trace alike run the same kernels on the same memory, so one's CUDA graph replays the other.
    """

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[tuple] = []
        self.made: set[int] = set()

    def _summary(self, value):
        if isinstance(value, torch.Tensor):
            address = value.untyped_storage().data_ptr()
            read = None if address in self.made else address
            return ("tensor", tuple(value.shape), value.dtype, value.stride(), value.storage_offset(), read)
        if isinstance(value, (list, tuple)):
            return tuple(self._summary(item) for item in value)
        return value

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.ops.append((func.__name__, self._summary(args), self._summary(tuple(sorted(kwargs.items())))))
        out = func(*args, **kwargs)
        for tensor in out if isinstance(out, (list, tuple)) else [out]:
            if isinstance(tensor, torch.Tensor):
                self.made.add(tensor.untyped_storage().data_ptr())
        return out


@pytest.fixture
def step_traces(monkeypatch) -> dict[int, list[list[tuple]]]:
    """Each StepGraph's traced steps (StepTrace), in the order they ran, keyed by the StepGraph."""
    traces: dict[int, list[list[tuple]]] = {}
    forward = graph_steps.StepGraph._forward

    def traced(self):
        trace = StepTrace()
        with trace:
            logits = forward(self)
        traces.setdefault(id(self), []).append(trace.ops)
        return logits

    monkeypatch.setattr(graph_steps.StepGraph, "_forward", traced)
    return traces


def _assert_kept_steps_trace_alike(traces: dict[int, list[list[tuple]]]) -> None:
    steps_per_batch = min(len(ops) for ops in traces.values())
    assert max(len(ops) for ops in traces.values()) > steps_per_batch, "no step was kept for a second batch"
    for ops in traces.values():
        assert all(step == ops[0] for step in ops[1:])


@pytest.mark.parametrize("family", sorted(set(CACHE_FAMILIES) - UNCAPTURED))
def test_a_kept_step_runs_the_same_operators_on_the_same_memory_in_every_batch(family, tmp_path, step_traces):
    loaded = replace(load_cache_family(family, tmp_path / family), kv_layout="graphed")
    texts = _near_widths()
    scored(loaded, texts, batch_size=2)
    scored(loaded, texts[::-1], batch_size=2)  # the same widths again, the kept steps met in another order
    _assert_kept_steps_trace_alike(step_traces)


@pytest.mark.parametrize("kind", ["llava", "qwen2_vl"])
def test_a_vlms_kept_step_runs_the_same_operators_on_the_same_memory_in_every_batch(kind, tmp_path, step_traces):
    loaded = load_model(describe_tiny_vlm(build_tiny_vlm(tmp_path / kind, kind, seed=SEEDS.get(kind, 0)), kind))
    engine = ScoringEngine(replace(loaded, kv_layout="graphed"),
                           ScoringConfig(horizon=HORIZON, prompt_tokens=PROMPT_TOKENS), batch_size=2)
    inputs = engine.prepare([CandidateText(**candidate) for candidate in vlm_candidates(vlm_images(tmp_path))])
    for _ in range(2):
        engine.generate_and_score(inputs)
    _assert_kept_steps_trace_alike(step_traces)


def test_batches_of_nearly_equal_width_share_a_kept_step(tmp_path, fed_steps, step_graphs_made_and_bound):
    made, bound = step_graphs_made_and_bound
    loaded = load_cache_family("llama", tmp_path / "llama")
    texts = _near_widths()
    usual = scored(loaded, texts, batch_size=2)
    static = scored(replace(loaded, kv_layout="graphed"), texts, batch_size=2)
    assert_same(usual, static)
    # Four batches; their capacities (prompt width + room, rounded up to CAPACITY_STEP) take fewer values.
    assert len(bound) == 4 and 1 <= len(made) < 4
    shelf = graph_steps.kept_steps(loaded.model)
    assert all(steps.mask.shape[-1] % CAPACITY_STEP == 0 for steps in shelf._steps.values())
    # Scored again: every batch finds its step kept, and scores exactly as it did.
    again = scored(replace(loaded, kv_layout="graphed"), texts, batch_size=2)
    assert len(made) < 4 and len(bound) == 8
    for first, second in zip(static, again, strict=True):
        assert second.generation.generated_ids == first.generation.generated_ids
        assert second.divergence.layer_divergence == first.divergence.layer_divergence


def test_a_decoding_beside_a_kept_steps_holder_captures_its_own(tmp_path):
    loaded = replace(load_cache_family("llama", tmp_path / "llama"), kv_layout="graphed")
    shelf = graph_steps.kept_steps(loaded.model)
    assert shelf.hold()
    try:
        static = scored(loaded, _near_widths(), batch_size=2)
        assert not shelf._steps, "a step was kept while another decoding held the kept steps"
    finally:
        shelf.let_go()
    assert_same(scored(replace(loaded, kv_layout="whole"), _near_widths(), batch_size=2), static)


@pytest.mark.parametrize("kind", ["llava", "qwen2_vl"])
def test_a_vlms_static_steps_score_like_its_usual_steps(kind, tmp_path, fed_steps):
    loaded = load_model(describe_tiny_vlm(build_tiny_vlm(tmp_path / kind, kind, seed=SEEDS.get(kind, 0)), kind))
    config = ScoringConfig(horizon=HORIZON, prompt_tokens=PROMPT_TOKENS)
    texts = [CandidateText(**candidate) for candidate in vlm_candidates(vlm_images(tmp_path))]
    usual, static = (ScoringEngine(model, config, batch_size=4) for model in (loaded,
                                                                               replace(loaded, kv_layout="graphed")))
    assert_same(usual.generate_and_score(usual.prepare(texts)), static.generate_and_score(static.prepare(texts)))
    assert fed_steps


def test_slots_refuse_states_kept_before_them():
    kept = BlockStates(2)
    kept(0, torch.zeros(1, 1, 4))
    with pytest.raises(RuntimeError, match="before their slots"):
        kept.use_slots([torch.zeros(1, 8, 4)] * 2, torch.zeros(1, dtype=torch.long))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_captured_steps_on_cuda_score_like_the_usual_steps(tmp_path, graph_replays):
    texts = [CandidateText(**candidate) for candidate in mixed_candidates()]
    for family in ("llama", "qwen3", "gpt2"):
        loaded = load_model(describe_model(str(tiny_model_dir(tmp_path / family, family)), dtype="float32",
                                           device="cuda"))
        usual = scored(replace(loaded, kv_layout="whole"), texts)
        graph_replays.clear()
        assert_same(usual, scored(replace(loaded, kv_layout="graphed"), texts))
        assert graph_replays, f"{family}: no step was replayed from a graph"
    config = ScoringConfig(horizon=HORIZON, prompt_tokens=PROMPT_TOKENS)
    pictured = [CandidateText(**candidate) for candidate in vlm_candidates(vlm_images(tmp_path))]
    for kind in ("llava", "qwen2_vl"):
        folder = build_tiny_vlm(tmp_path / kind, kind, seed=SEEDS.get(kind, 0))
        loaded = load_model(describe_tiny_vlm(folder, kind, "cuda"))
        usual, static = (ScoringEngine(model, config, batch_size=4)
                         for model in (replace(loaded, kv_layout="whole"), replace(loaded, kv_layout="graphed")))
        graph_replays.clear()
        assert_same(usual.generate_and_score(usual.prepare(pictured)),
                     static.generate_and_score(static.prepare(pictured)))
        assert graph_replays, f"{kind}: no step was replayed from a graph"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_step_that_cannot_be_captured_runs_eagerly_on_cuda(tmp_path, caplog, graph_replays):
    loaded, texts, usual = cuda_llama_scored_as_usual(tmp_path)

    def reads_back(module, args, output):
        # What a capture forbids: the host waits for a value of the step being recorded.
        if torch.cuda.is_current_stream_capturing():
            output[0].sum().item()

    hook = loaded.blocks[0].register_forward_hook(reads_back)
    try:
        assert_same(usual, scored(replace(loaded, kv_layout="graphed"), texts))
    finally:
        hook.remove()
    assert not graph_replays
    # Once per model: the batches after the first do not try again.
    assert caplog.text.count("capturing one failed") == 1


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_kept_graphs_on_cuda_replay_for_later_batches(tmp_path, step_graphs_made_and_bound):
    made, bound = step_graphs_made_and_bound
    loaded = load_model(describe_model(str(tiny_model_dir(tmp_path / "llama")), dtype="float32", device="cuda"))
    texts = _near_widths()
    usual = scored(replace(loaded, kv_layout="whole"), texts, batch_size=2)
    shelf = graph_steps.kept_steps(loaded.model)
    for _ in range(2):
        assert_same(usual, scored(replace(loaded, kv_layout="graphed"), texts, batch_size=2))
    # Eight batches in two rounds; each StepGraph captured its step once, and fewer were made than batches ran.
    assert len(bound) == 8
    assert len(made) < 4
    assert shelf.captures == len(made)


def test_auto_captures_the_steps_of_an_sdpa_model_on_one_gpu_only(tmp_path):
    # The choice alone, on a model loaded here: a model on a CUDA device is only named by its input device.
    path = str(tiny_model_dir(tmp_path / "llama"))
    sdpa = load_model(describe_model(path, dtype="float32", device="cpu"), "sdpa")
    eager = load_model(describe_model(path, dtype="float32", device="cpu"), "eager")
    gpu = torch.device("cuda", 0)
    assert kv_layout(sdpa) == "buffered"
    assert kv_layout(replace(sdpa, input_device=gpu)) == "graphed"
    assert kv_layout(replace(eager, input_device=gpu)) == "dynamic"
    assert kv_layout(replace(sdpa, input_device=gpu, kv_layout="whole")) == "whole"
    sdpa.model.hf_device_map = {"model.embed_tokens": 0, "model.layers.0": 0, "model.layers.1": 1, "lm_head": 1}
    assert kv_layout(replace(sdpa, input_device=gpu)) == "dynamic"
    sdpa.model.hf_device_map = {"": 0}
    assert kv_layout(replace(sdpa, input_device=gpu)) == "graphed"


def test_a_page_of_many_widths_finds_every_step_kept_once_the_kv_pool_stops_growing(tmp_path,
                                                                                    step_graphs_made_and_bound):
    made, bound = step_graphs_made_and_bound
    loaded = replace(load_cache_family("llama", tmp_path / "llama"), kv_layout="graphed")
    # One row a batch, each a prompt 16 words longer than the one before: a KV capacity of its own each, more
    # of them than the 8 steps once kept, as a page of 16 batches brings.
    texts = [CandidateText(f"w{index}", " ".join(WORDS[(index + k) % len(WORDS)] for k in range(8 + 16 * index)), "",
                           " " + " ".join(WORDS[(5 * index + k) % len(WORDS)] for k in range(8)) + "\n")
             for index in range(12)]
    first = scored(loaded, texts, batch_size=1)
    # The first pass grows the pool batch by batch, moving the buffers each step read; the second captures on
    # the pool's final storage; the third finds every one of its steps kept.
    scored(loaded, texts, batch_size=1)
    widths = {steps.mask.shape[-1] for steps in graph_steps.kept_steps(loaded.model)._steps.values()}
    assert len(widths) > 8
    made_before = len(made)
    third = scored(loaded, texts, batch_size=1)
    assert len(made) == made_before and len(bound) == 3 * len(texts)
    assert_same(first, third)
