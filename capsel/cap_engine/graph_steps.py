"""ŷ's greedy steps replayed from one CUDA graph per batch.

A greedy step is a one-token forward of every row. On an 8B model at batch 256 it launches about a thousand
small kernels, and the host's launching, not the GPU's work, sets its pace (benchmarks/README.md). Captured
once per batch, a step is one launch. What changes from step to step reaches the graph through tensors it
reads in place: the fed tokens and their positions, the attention mask over the whole KV buffer, the position
each layer writes its new states at, and the slot the kept block outputs go to.

Only a model whose every cache layer is a whole buffer (kv_buffers, layout "graphed": so no sliding windows)
and whose attention is SDPA (which takes the boolean mask built here) is captured; any other batch runs its
steps as usual. A VLM's steps feed text alone (its images are in the prefilled cache), so Llava's and
Qwen2-VL's are captured like a text model's. On CPU the same step runs eagerly every time: that is how the
tests hold it to the usual path.
"""

from __future__ import annotations

from typing import Any

import torch

from capsel.cap_engine.divergence import BlockStates
from capsel.cap_engine.forward import PromptState, call_model, kv_layout
from capsel.cap_engine.kv_buffers import BufferedLayer
from capsel.models.loading import LoadedModel

# Eager runs of the first step before capture: they let CUDA libraries set up their handles and workspaces
# outside the graph. Running a step again rewrites the same states at the same positions, so its result holds.
WARMUP_RUNS = 2


def step_graph(loaded: LoadedModel, state: PromptState, horizon: int, kept: BlockStates | None) -> StepGraph | None:
    """A StepGraph for this batch's greedy steps, or None where its steps run as usual."""
    layers = getattr(state.cache, "layers", None)
    if (kv_layout(loaded) != "graphed" or not layers
            or getattr(loaded.model.config, "_attn_implementation", None) != "sdpa"
            or not all(type(layer) is BufferedLayer and layer.whole for layer in layers)):
        return None
    return StepGraph(loaded, state, horizon, kept)


class StepGraph:
    """One batch's greedy step as static tensors and, on CUDA, a graph captured at the first step."""

    def __init__(self, loaded: LoadedModel, state: PromptState, horizon: int, kept: BlockStates | None):
        self.loaded, self.cache = loaded, state.cache
        rows, device = state.mask.shape[0], state.mask.device
        capacity = state.cache.layers[0].capacity
        self.ids = torch.zeros((rows, 1), dtype=torch.long, device=device)
        self.positions = torch.zeros((rows, 1), dtype=torch.long, device=device)
        # [rows, 1, 1, keys]: True where a query may attend; the causal limit is the unfilled tail staying False.
        self.mask = torch.zeros((rows, 1, 1, capacity), dtype=torch.bool, device=device)
        self.mask[:, 0, 0, : state.mask.shape[1]] = state.mask.bool()
        self.write_at = torch.zeros(1, dtype=torch.long, device=device)
        self.slot = torch.zeros(1, dtype=torch.long, device=device)
        for layer in state.cache.layers:
            layer.write_at = self.write_at
        self.kept = kept
        if kept is not None:
            # Allocated here, on the stream the steps run on, before any warm-up or capture.
            width = (rows, horizon, loaded.model.get_input_embeddings().embedding_dim)
            kept.use_slots([torch.zeros(width, dtype=loaded.model.dtype, device=device) for _ in loaded.blocks],
                           self.slot)
        self.graph: Any = None
        self.logits: torch.Tensor | None = None

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
        """Hand the cache back to the usual path, its filled part everything fed so far; let the graph go."""
        for layer in self.cache.layers:
            layer.settle(state.mask.shape[1])
        self.graph = self.logits = None

    def _run(self) -> torch.Tensor:
        if self.graph is not None:
            self.graph.replay()
            assert self.logits is not None
            return self.logits
        if self.ids.device.type != "cuda":
            return self._forward()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(WARMUP_RUNS):
                logits = self._forward()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self.logits = self._forward()
        self.graph = graph
        return logits

    def _forward(self) -> torch.Tensor:
        return call_model(self.loaded, 1, self.cache, input_ids=self.ids, attention_mask=self.mask,
                          position_ids=self.positions)
