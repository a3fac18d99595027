"""Load any Hugging Face causal LM and its tokenizer for scoring, with a recorded identity."""

from __future__ import annotations

import importlib.util
import inspect
from dataclasses import dataclass

import torch
from torch import nn

from capsel.errors import CapselError
from capsel.models.load_lock import MODEL_LOAD_LOCK
from capsel.scoring.blocks import find_decoder_blocks
from capsel.scoring.model_source import ModelSource, resolve_model

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
ATTENTION_FALLBACK = {"flash_attention_2": "sdpa", "sdpa": "eager"}


@dataclass(frozen=True)
class ModelInfo:
    """What identifies a model run: source files, dtype, device, tokenizer and EOS ids (no weights loaded)."""

    source: ModelSource
    dtype: str
    device: str
    tokenizer: object
    eos_token_ids: frozenset[int]
    architecture: str
    n_layers: int
    trust_remote_code: bool = False

    @property
    def fingerprint(self) -> str:
        """Key of every generation and divergence this model writes."""
        return self.source.fingerprint(self.dtype)


@dataclass
class LoadedModel:
    """An HF causal LM in eval mode with its decoder blocks located."""

    info: ModelInfo
    model: nn.Module
    blocks: nn.ModuleList
    input_device: torch.device
    supports_logits_to_keep: bool = False


def resolve_device(device: str) -> str:
    """'auto' is cuda when a GPU is visible, else cpu; asking for cuda without one is an error."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise CapselError("--device cuda was asked for, but no CUDA device is visible")
    if device not in ("cpu", "cuda"):
        raise CapselError(f"unknown device {device!r}; use auto, cpu or cuda")
    return device


def resolve_dtype(dtype: str, device: str) -> str:
    """'auto' is bfloat16 on CUDA (as in the paper) and float32 on CPU."""
    if dtype == "auto":
        return "bfloat16" if device == "cuda" else "float32"
    if dtype not in DTYPES:
        raise CapselError(f"unknown dtype {dtype!r}; use auto, float32 or bfloat16")
    return dtype


def worker_device(device: str, dtype: str, uses_gpus: bool, local_cuda: bool) -> tuple[str, str]:
    """(device, dtype) fixed once by a flow, so every worker computes under one model fingerprint.

    `auto` is cuda when shards request GPUs (or this host has one).
    """
    if device == "auto":
        device = "cuda" if uses_gpus or local_cuda else "cpu"
    return device, resolve_dtype(dtype, device)


def host_device(device: str) -> str:
    """The device the flow's host describes a model on: the workers' own, or cpu where this host has no GPU."""
    return device if device != "cuda" or torch.cuda.is_available() else "cpu"


def describe_model(
    name_or_path: str,
    *,
    revision: str | None = None,
    dtype: str = "auto",
    device: str = "auto",
    trust_remote_code: bool = False,
) -> ModelInfo:
    """Resolve a model, hash its files and load its tokenizer and config, without loading weights."""
    from transformers import AutoConfig, AutoTokenizer, GenerationConfig

    source = resolve_model(name_or_path, revision)
    device = resolve_device(device)
    config = AutoConfig.from_pretrained(source.local_dir, trust_remote_code=trust_remote_code)
    tokenizer = AutoTokenizer.from_pretrained(source.local_dir, trust_remote_code=trust_remote_code)
    try:
        generation = GenerationConfig.from_pretrained(source.local_dir)
    except OSError:
        generation = GenerationConfig.from_model_config(config)
    return ModelInfo(
        source=source,
        dtype=resolve_dtype(dtype, device),
        device=device,
        tokenizer=tokenizer,
        eos_token_ids=eos_token_ids(tokenizer, generation.eos_token_id),
        architecture=(config.architectures or [type(config).__name__])[0],
        n_layers=int(config.get_text_config().num_hidden_layers),
        trust_remote_code=trust_remote_code,
    )


def eos_token_ids(tokenizer, generation_eos: int | list[int] | None) -> frozenset[int]:
    """Every id that ends a generation: the generation config's EOS ids and the tokenizer's."""
    ids = set()
    if generation_eos is not None:
        ids.update([generation_eos] if isinstance(generation_eos, int) else generation_eos)
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    return frozenset(int(i) for i in ids)


def attention_implementation(info: ModelInfo, requested: str = "auto") -> str:
    """'auto': FlashAttention-2 for bf16 on CUDA when flash-attn is installed, else PyTorch SDPA."""
    if requested != "auto":
        return requested
    if info.device == "cuda" and info.dtype == "bfloat16" and importlib.util.find_spec("flash_attn") is not None:
        return "flash_attention_2"
    return "sdpa"


def load_model(info: ModelInfo, attn_implementation: str = "auto") -> LoadedModel:
    """Load the weights (safetensors when published) in eval mode on the resolved device."""
    from transformers import AutoModelForCausalLM

    attn_implementation = attention_implementation(info, attn_implementation)
    kwargs = dict(
        dtype=DTYPES[info.dtype],
        trust_remote_code=info.trust_remote_code,
        use_safetensors=info.source.uses_safetensors,
    )
    if info.device == "cuda" and _has_accelerate():
        # Loads straight onto the GPUs, spreading a model too large for one over all visible GPUs.
        kwargs["device_map"] = "auto"
    while True:
        try:
            with MODEL_LOAD_LOCK:
                model = AutoModelForCausalLM.from_pretrained(
                    info.source.local_dir, attn_implementation=attn_implementation, **kwargs
                )
            break
        except (ValueError, ImportError) as exc:
            # An architecture without this attention kernel falls back to the next one; other errors surface.
            message = str(exc).lower()
            if attn_implementation not in ATTENTION_FALLBACK or not ("attn" in message or "attention" in message):
                raise
            attn_implementation = ATTENTION_FALLBACK[attn_implementation]
    if "device_map" not in kwargs:
        model.to(info.device)
    return wrap_model(info, model)


def wrap_model(info: ModelInfo, model: nn.Module) -> LoadedModel:
    """An already-built causal LM (on its device) ready for scoring: eval mode, decoder blocks located."""
    model.eval()
    return LoadedModel(
        info=info,
        model=model,
        blocks=find_decoder_blocks(model, info.n_layers),
        input_device=model.get_input_embeddings().weight.device,
        supports_logits_to_keep="logits_to_keep" in inspect.signature(model.forward).parameters,
    )


def _has_accelerate() -> bool:
    try:
        import accelerate  # noqa: F401
    except ImportError:
        return False
    return True
