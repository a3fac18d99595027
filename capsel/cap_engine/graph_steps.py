"""ŷ's greedy steps replayed from a CUDA graph captured once per batch shape.

A greedy step is a one-token forward of every row. On an 8B model at batch 256 it launches about a thousand
small kernels, and the host's launching, not the GPU's work, sets its pace (benchmarks/README.md). Captured
once, a step is one launch. What changes from step to step reaches the graph through tensors it
reads in place: the fed tokens and their positions, the attention mask over the whole KV buffer, the position
each layer writes its new states at, and the slot the kept block outputs go to.

A captured step is kept for the next batch of the same shape (rows, KV capacity, horizon): every tensor the
step reads is then at the same address (the KV pool hands out the same storage, and the static inputs and
block-output slots are the kept step's own), so the graph replays without a new capture. forward.new_cache
rounds a graphed batch's capacity up to a multiple of CAPACITY_STEP so that batches of nearly equal width
share one.

Only a model whose every cache layer is a whole buffer (kv_buffers, layout "graphed": so no sliding windows)
and whose attention is SDPA (which takes the boolean mask built here) is captured; any other batch runs its
steps as usual. A VLM's steps feed text alone (its images are in the prefilled cache), so Llava's and
Qwen2-VL's are captured like a text model's. On CPU the same step runs eagerly every time: that is how the
tests hold it to the usual path.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any, Callable

import torch

from capsel.cap_engine.divergence import BlockStates
from capsel.cap_engine.forward import PromptState, call_model, kv_layout
from capsel.cap_engine.kv_buffers import BufferedLayer
from capsel.cap_engine.per_model import Exclusive, PerModel
from capsel.models.loading import LoadedModel

logger = logging.getLogger(__name__)

# Eager runs of the first step before capture: they let CUDA libraries set up their handles and workspaces
# outside the graph. Running a step again rewrites the same states at the same positions, so its result holds.
WARMUP_RUNS = 2
# Captured steps kept per model, the least recently used let go first. A page of the runner sorts its rows by
# length and runs its batches from short to long (16 of them, runner.job.BATCHES_PER_PAGE), so each brings its own
# capacity: the default P + R of 304 positions rounds to at most 19 (CAPACITY_STEP). Keeping them all lets a
# page replay what the page before captured, once the KV pool has stopped growing (its buffers then stay where
# the graphs read them). On an H100 at batch 256 a first pass over two batches (two captures, the pool growing)
# took 0.28 s longer than a second pass over them (one capture: the first batch's buffers had moved), in
# decode_profile.py. Each kept step holds its logits, rows x vocab: 66 MB at batch 256 on a Llama-3 vocabulary.
KEPT_STEPS = 24


def step_graph(loaded: LoadedModel, state: PromptState, horizon: int, kept: BlockStates | None) -> StepGraph | None:
    """A StepGraph for this batch's greedy steps (a kept one where its shape was seen), or None where its steps
    run as usual."""
    layers = getattr(state.cache, "layers", None)
    if (kv_layout(loaded) != "graphed" or not layers
            or getattr(loaded.model.config, "_attn_implementation", None) != "sdpa"
            or not all(type(layer) is BufferedLayer and layer.whole for layer in layers)):
        return None
    shelf = kept_steps(loaded.model)
    if not shelf.hold():
        # Another decoding on this model holds the kept steps: this one captures its own and lets it go.
        return StepGraph(loaded, state, horizon, kept)
    shape = (state.mask.shape[0], layers[0].capacity, horizon, kept is not None)
    try:
        steps = shelf.find(shape, _addresses(state.cache))
        if steps is None:
            return shelf.keep(shape, StepGraph(loaded, state, horizon, kept, shelf))
        steps.bind(state, kept)
        return steps
    except BaseException:
        shelf.let_go()  # StepGraph.finish lets them go once the steps have run; these never will
        raise


def kept_steps(model: Any) -> KeptSteps:
    """The captured steps kept for `model`; they live as long as the model."""
    return _KEPT.of(model)


def _addresses(cache: Any) -> tuple[int, ...]:
    """Where each layer's KV buffers live: a kept graph reads and writes exactly there."""
    return tuple(pointer for layer in cache.layers
                 for pointer in (layer.key_buffer.data_ptr(), layer.value_buffer.data_ptr()))


class KeptSteps(Exclusive):
    """One model's captured steps by batch shape, for one decoding at a time (`hold`, then `let_go`).

    Their graphs share one memory pool (they never replay at once, and none reads another's output), and the
    steps of one row count and horizon share their block-output slots and their fed ids and positions.
    """

    def __init__(self) -> None:
        super().__init__()
        self._steps: OrderedDict[tuple[Any, ...], StepGraph] = OrderedDict()
        self._shared: dict[tuple[Any, ...], list[torch.Tensor]] = {}
        self.pool: Any = None
        self.captures = 0
        self.uncapturable = False

    def find(self, shape: tuple[Any, ...], addresses: tuple[int, ...]) -> StepGraph | None:
        """The kept step of `shape`, if it was captured on KV buffers at `addresses` (a regrown pool moves them)."""
        steps = self._steps.get(shape)
        if steps is None or steps.addresses != addresses:
            return None
        self._steps.move_to_end(shape)
        return steps

    def keep(self, shape: tuple[Any, ...], steps: StepGraph) -> StepGraph:
        """Keep `steps` for later batches of `shape`, in place of any step kept for it before."""
        self._steps[shape] = steps
        self._steps.move_to_end(shape)
        while len(self._steps) > KEPT_STEPS:
            self._steps.popitem(last=False)
        live = {(other.rows, other.horizon) for other in self._steps.values()}
        for key in [key for key in self._shared if key[:2] not in live]:
            del self._shared[key]
        return steps

    def shared(self, rows: int, horizon: int, what: str, make: Callable[[], list[torch.Tensor]]) -> list[torch.Tensor]:
        """The tensors (`what`) the steps of `rows` and `horizon` share, made by `make()` the first time."""
        key = (rows, horizon, what)
        if key not in self._shared:
            self._shared[key] = make()
        return self._shared[key]


_KEPT = PerModel(KeptSteps)


class StepGraph:
    """One batch shape's greedy step as static tensors and, on CUDA, a graph captured at its first step."""

    def __init__(self, loaded: LoadedModel, state: PromptState, horizon: int, kept: BlockStates | None,
                 shelf: KeptSteps | None = None):
        self.loaded, self.shelf, self.horizon = loaded, shelf, horizon
        self.rows, device = state.mask.shape[0], state.mask.device
        capacity = state.cache.layers[0].capacity
        # Allocated here, on the stream the steps run on, before any warm-up or capture.
        self.ids, self.positions, self.write_at, self.slot = self._shared("inputs", lambda: [
            torch.zeros(shape, dtype=torch.long, device=device) for shape in ((self.rows, 1),) * 2 + ((1,),) * 2])
        # [rows, 1, 1, keys]: True where a query may attend; the causal limit is the unfilled tail staying False.
        self.mask = torch.zeros((self.rows, 1, 1, capacity), dtype=torch.bool, device=device)
        width = (self.rows, horizon, loaded.model.get_input_embeddings().embedding_dim)
        self.slots = [] if kept is None else self._shared("slots", lambda: [
            torch.zeros(width, dtype=loaded.model.dtype, device=device) for _ in loaded.blocks])
        self.addresses = _addresses(state.cache)
        self.graph: Any = None
        # A model whose step failed to capture once runs its steps eagerly from then on (see _run).
        self.uncapturable = shelf is not None and shelf.uncapturable
        self.logits: torch.Tensor | None = None
        self.cache: Any = None
        self.kept: BlockStates | None = None
        self.bind(state, kept)

    def _shared(self, what: str, make: Callable[[], list[torch.Tensor]]) -> list[torch.Tensor]:
        return make() if self.shelf is None else self.shelf.shared(self.rows, self.horizon, what, make)

    def bind(self, state: PromptState, kept: BlockStates | None) -> None:
        """Take on a new batch of this shape: its prompt mask, its cache's layers and its block-output sink."""
        self.cache, self.kept = state.cache, kept
        self.mask.zero_()
        self.mask[:, 0, 0, : state.mask.shape[1]] = state.mask.bool()
        for layer in state.cache.layers:
            layer.write_at = self.write_at
        if kept is not None:
            kept.use_slots(self.slots, self.slot)

    def feed(self, state: PromptState, ids: torch.Tensor, mask: torch.Tensor) -> None:
        """Feed one token per row ([rows, 1] ids and mask) and keep the next logits, as forward.extend does."""
        write = state.mask.shape[1]
        self.ids.copy_(ids)
        self.positions.copy_(state.next_positions[:, None] + state.fed)
        self.mask[:, 0, 0, write] = mask[:, 0].to(self.mask.device).bool()
        self.write_at.fill_(write)
        self.slot.fill_(state.fed)
        state.last_logits = self._run()[:, -1]
        state.mask = torch.cat([state.mask, mask.to(state.mask.device)], dim=1)
        state.fed += 1
        if self.kept is not None:
            self.kept.n_slotted = state.fed

    def finish(self, state: PromptState) -> None:
        """Hand the cache back to the usual path, its filled part everything fed so far; the step stays kept for
        the next batch of its shape, or is let go if it was not kept."""
        for layer in self.cache.layers:
            layer.settle(state.mask.shape[1])
        self.cache = self.kept = None
        if self.shelf is None:
            self.graph = self.logits = None
        else:
            self.shelf.let_go()

    def _run(self) -> torch.Tensor:
        if self.graph is not None:
            self.graph.replay()
            assert self.logits is not None
            return self.logits
        if self.ids.device.type != "cuda" or self.uncapturable:
            return self._forward()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(WARMUP_RUNS):
                logits = self._forward()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        pool = None if self.shelf is None else self.shelf.pool
        try:
            with torch.cuda.graph(graph, pool=pool):
                self.logits = self._forward()
        except RuntimeError as error:
            # A step doing what a capture forbids (reading a value back, say) runs eagerly instead, as on CPU: the
            # same step, one launch per kernel. A capture records without running, so the warm-up's result stands.
            logger.warning("greedy steps run without a CUDA graph: capturing one failed (%s)", error)
            self.uncapturable = True
            if self.shelf is not None:
                self.shelf.uncapturable = True
            return logits
        if self.shelf is not None:
            self.shelf.pool = graph.pool()
            self.shelf.captures += 1
        self.graph = graph
        return logits

    def _forward(self) -> torch.Tensor:
        return call_model(self.loaded, 1, self.cache, input_ids=self.ids, attention_mask=self.mask,
                          position_ids=self.positions)
