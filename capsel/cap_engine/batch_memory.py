"""Batch size from free GPU memory: a per-candidate byte estimate from the model config, capped by what is free.

Per candidate, at the worst case of a full P-token prompt and R-token responses:
- KV cache: layers x 2 x kv_heads x head_dim x (P + 2R) x dtype bytes (the prompt plus one
  branch is all the cache holds, but a crop keeps the old storage until the next append);
- y-hat's kept block outputs: layers x R x hidden, twice (the per-step pieces and their concatenation);
- one layer's prefill activations: P x (4 hidden + 3 intermediate), plus attention scores
  should SDPA fall back to its math kernel (2 x heads x P x (P + 2R));
- logits at the R response positions: R x vocab (never over the prompt).
Besides that, once per batch: the float32 log-softmax of one row's response logits in the NLL.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from capsel.cap_engine.config import ScoringConfig
from capsel.errors import CapselError
from capsel.models.loading import LoadedModel

DEFAULT_BATCH_SIZE = 16
# Auto sizes are powers of two: on one H100 (8B shape, bf16, 2,048 realistic candidates, captured steps) batch 512
# ran at 101.2 and 101.8 cand/s and 256 at 94.4 and 97.8, but the 462 rows the memory estimate allowed ran at 83.0
# (benchmarks/README.md). A power of two keeps the sizes measured; the cap is the largest of them.
MAX_AUTO_BATCH_SIZE = 512
# Share of the free memory the estimate may plan for; the rest absorbs allocator fragmentation.
HEADROOM = 0.85
# Picture positions planned per VLM prompt: four Llava-1.5 pictures' worth, more than most multimodal SFT rows hold;
# the vision tower's own activations, one picture at a time, fit in the headroom.
IMAGE_POSITIONS_PLANNED = 4 * 576


@dataclass(frozen=True)
class ModelShape:
    """The dimensions of a decoder-only transformer that set its activation and cache sizes."""

    n_layers: int
    hidden: int
    intermediate: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    vocab: int

    @classmethod
    def from_config(cls, config) -> "ModelShape":
        """Read the shape from an HF config, whatever its family calls the fields."""
        text = config.get_text_config() if hasattr(config, "get_text_config") else config
        hidden = _first(text, "hidden_size", "n_embd", "d_model")
        n_heads = _first(text, "num_attention_heads", "n_head")
        n_kv_heads = getattr(text, "num_key_value_heads", None) or n_heads
        head_dim = getattr(text, "head_dim", None) or hidden // n_heads
        intermediate = getattr(text, "intermediate_size", None) or getattr(text, "n_inner", None) or 4 * hidden
        return cls(
            n_layers=_first(text, "num_hidden_layers", "n_layer"), hidden=hidden, intermediate=intermediate,
            n_heads=n_heads, n_kv_heads=n_kv_heads, head_dim=head_dim, vocab=_first(text, "vocab_size"),
        )

    def kv_bytes(self, n_tokens: int, dtype_bytes: int) -> int:
        """Keys and values of every layer for n_tokens positions of one sequence."""
        return self.n_layers * 2 * self.n_kv_heads * self.head_dim * n_tokens * dtype_bytes


def candidate_bytes(shape: ModelShape, prompt_tokens: int, horizon: int, dtype_bytes: int) -> int:
    """Peak bytes one candidate adds to a scoring batch (see the module docstring for the terms)."""
    kv = shape.kv_bytes(prompt_tokens + 2 * horizon, dtype_bytes)
    kept = 2 * shape.n_layers * horizon * shape.hidden * dtype_bytes
    activations = prompt_tokens * (4 * shape.hidden + 3 * shape.intermediate) * dtype_bytes
    scores = 2 * shape.n_heads * prompt_tokens * (prompt_tokens + 2 * horizon) * dtype_bytes
    logits = horizon * shape.vocab * dtype_bytes
    return kv + kept + activations + scores + logits


def batch_fixed_bytes(shape: ModelShape, horizon: int) -> int:
    """Bytes a batch needs once, whatever its size: one row's float32 response logits and their log-softmax."""
    return 2 * horizon * shape.vocab * 4


def auto_batch_size(
    shape: ModelShape, prompt_tokens: int, horizon: int, dtype_bytes: int, free_bytes: int,
    max_batch: int = MAX_AUTO_BATCH_SIZE,
) -> int:
    """The largest power of two of candidates whose estimated peak fits in HEADROOM of the free bytes, at most
    max_batch; 1 when not even one fits."""
    budget = int(free_bytes * HEADROOM) - batch_fixed_bytes(shape, horizon)
    fits = int(max(1, min(max_batch, budget // candidate_bytes(shape, prompt_tokens, horizon, dtype_bytes))))
    return 1 << (fits.bit_length() - 1)


def free_device_bytes(device: torch.device) -> int:
    """Memory still usable on a CUDA device: free to the driver plus what PyTorch has cached but not used."""
    free, _total = torch.cuda.mem_get_info(device)
    return int(free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device))


def resolve_batch_size(setting: int | str, loaded: LoadedModel, config: ScoringConfig) -> int:
    """A number stays as given; 'auto' sizes from free memory on CUDA and is DEFAULT_BATCH_SIZE on CPU.

    On CPU a larger batch is not faster and memory rarely binds, so there is nothing to size.
    With a model spread over several GPUs, the input device's free memory decides.
    """
    if setting != "auto":
        return int(setting)
    if loaded.input_device.type != "cuda":
        return DEFAULT_BATCH_SIZE
    dtype_bytes = next(loaded.model.parameters()).element_size()
    shape = ModelShape.from_config(loaded.model.config)
    return auto_batch_size(shape, planned_prompt_positions(config, loaded.info.is_multimodal), config.horizon,
                           dtype_bytes, free_device_bytes(loaded.input_device))


def planned_prompt_positions(config: ScoringConfig, multimodal: bool) -> int:
    """Prompt positions one candidate is planned for: P, plus a VLM's picture tokens, which P does not count.

    A VLM's prompts share a batch (vision_batch), and a picture adds hundreds of positions past P (576 for
    Llava-1.5, 256 for Gemma 3, by size for Qwen2-VL), so a VLM is sized as if each prompt held
    IMAGE_POSITIONS_PLANNED of them.
    """
    return config.prompt_tokens + (IMAGE_POSITIONS_PLANNED if multimodal else 0)


def _first(config, *names: str) -> int:
    for name in names:
        value = getattr(config, name, None)
        if value:
            return int(value)
    raise CapselError(f"{type(config).__name__} has none of {', '.join(names)}: cannot size batches from it")
