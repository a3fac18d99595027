"""Loading causal LMs: described with a recorded identity (fingerprint, EOS ids, layers), then loaded for scoring;
or loaded plainly for the rank survey and the lab. Offline, safetensors only unless pickle is allowed, no remote code
by default."""

from __future__ import annotations

import functools
import importlib.util
import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from capsel.models.blocks import find_decoder_blocks
from capsel.models.devices import DTYPES, resolve_device, resolve_dtype
from capsel.models.folder_safety import checked_weights
from capsel.models.installed import installed_model_path
from capsel.models.load_errors import model_load_errors
from capsel.models.load_lock import MODEL_LOAD_LOCK
from capsel.models.source import ModelSource, resolve_model

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

# The scoring engine's KV caches (cap_engine.forward.new_cache); "auto" picks one by device.
# "graphed": "whole" with ŷ's greedy steps captured as one CUDA graph per batch (cap_engine.graph_steps).
KV_LAYOUTS = ("auto", "dynamic", "buffered", "whole", "graphed")
ATTENTION_FALLBACK = {"flash_attention_2": "sdpa", "sdpa": "eager"}


@dataclass(frozen=True)
class ModelInfo:
    """What identifies a model run: source files, dtype, device, tokenizer and EOS ids (no weights loaded)."""

    source: ModelSource
    dtype: str
    device: str
    tokenizer: Any  # a transformers tokenizer
    eos_token_ids: frozenset[int]
    architecture: str
    n_layers: int
    trust_remote_code: bool = False
    processor: Any = None  # a vision-language model's processor (image processor + tokenizer); None for text models

    @property
    def is_multimodal(self) -> bool:
        """True for a vision-language model loaded with its processor."""
        return self.processor is not None

    @property
    def fingerprint(self) -> str:
        """Key of every generation and divergence this model writes."""
        return self.source.fingerprint(self.dtype)


@dataclass
class LoadedModel:
    """An HF causal LM in eval mode with its decoder blocks located."""

    info: ModelInfo
    model: Any  # a transformers causal LM (PreTrainedModel), typed loosely as transformers types it
    blocks: nn.ModuleList
    input_device: torch.device
    supports_logits_to_keep: bool = False
    # The KV cache the scoring engine builds for a batch (cap_engine.forward.new_cache): "auto" picks by device.
    kv_layout: str = "auto"
    # Whether a batch's prompts are prefilled in length groups (cap_engine.prefill_groups): None picks by device.
    prefill_groups: bool | None = None
    # Whether the norms and MLPs run compiled (cap_engine.compiled_norms: their elementwise work fused): None picks
    # by device, compiled for a text model on CUDA.
    compile_norms_and_mlps: bool | None = None
    # Whether the output head runs in slices of the vocabulary where they give its own bits (cap_engine.sliced_head):
    # None picks a float32 head on CPU.
    sliced_head: bool | None = None
    # Whether a greedy step finds each row's argmax from a bfloat16 estimate and the exact slices that can hold it
    # (cap_engine.greedy_head): None does wherever a float32 head runs in slices.
    screened_greedy_head: bool | None = None

    @property
    def processor(self) -> Any:
        """The processor of a vision-language model (None for a text model)."""
        return self.info.processor


def describe_model(
    name_or_path: str,
    *,
    revision: str | None = None,
    dtype: str = "auto",
    device: str = "auto",
    trust_remote_code: bool = False,
    allow_pickle: bool = False,
) -> ModelInfo:
    """Resolve a model, hash its files and load its tokenizer and config, without loading weights."""
    from transformers import AutoConfig, AutoProcessor, AutoTokenizer, GenerationConfig

    source = resolve_model(name_or_path, revision, allow_pickle)
    device = resolve_device(device)
    processor = None
    with model_load_errors(name_or_path):
        config = AutoConfig.from_pretrained(source.local_dir, trust_remote_code=trust_remote_code)
        if is_vision_language(config):
            processor = AutoProcessor.from_pretrained(source.local_dir, trust_remote_code=trust_remote_code)
            tokenizer = processor.tokenizer
        else:
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
        processor=processor,
    )


def is_vision_language(config) -> bool:
    """True for an image-text-to-text architecture: a vision part, and AutoModelForImageTextToText maps it."""
    from transformers import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING

    return getattr(config, "vision_config", None) is not None and type(config) in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING


def eos_token_ids(tokenizer, generation_eos: int | list[int] | None) -> frozenset[int]:
    """Every id that ends a generation: the generation config's EOS ids and the tokenizer's."""
    ids = set()
    if generation_eos is not None:
        ids.update([generation_eos] if isinstance(generation_eos, int) else generation_eos)
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    return frozenset(int(i) for i in ids)


def attention_implementation(info: ModelInfo, requested: str = "auto") -> str:
    """'auto': FlashAttention-2 for bf16 on CUDA when flash-attn is installed, eager attention for bf16 on a CPU
    whose SDPA kernel fails in bf16, else PyTorch SDPA."""
    if requested != "auto":
        return requested
    if info.device == "cuda" and info.dtype == "bfloat16" and importlib.util.find_spec("flash_attn") is not None:
        return "flash_attention_2"
    if info.device == "cpu" and info.dtype == "bfloat16" and not cpu_bfloat16_sdpa_runs():
        return "eager"
    return "sdpa"


@functools.cache
def cpu_bfloat16_sdpa_runs() -> bool:
    """Whether torch's CPU SDPA runs in bf16 here. torch 2.13's flash kernel packs bf16 with AMX from 64 positions on
    wherever the CPU has AMX, and raises ("pack_vnni2 is only supported when avx512 is supported") when ATen's
    kernels are capped below AVX-512 (ATEN_CPU_CAPABILITY=avx2 or default); eager attention computes the same
    softmax(QK^T/sqrt(d))V in plain products."""
    import torch
    import torch.nn.functional as F

    query = torch.zeros(1, 1, 64, 8, dtype=torch.bfloat16)
    try:
        F.scaled_dot_product_attention(query, query, query, is_causal=True)
    except RuntimeError:
        return False
    return True


def load_model(info: ModelInfo, attn_implementation: str = "auto") -> LoadedModel:
    """Load the weights (safetensors when published) in eval mode on the resolved device."""
    attn_implementation = attention_implementation(info, attn_implementation)
    kwargs: dict[str, Any] = dict(
        dtype=DTYPES[info.dtype],
        trust_remote_code=info.trust_remote_code,
        use_safetensors=info.source.uses_safetensors,
    )
    if info.device == "cuda" and _has_accelerate():
        # Loads straight onto the GPUs, spreading a model too large for one over all visible GPUs.
        kwargs["device_map"] = "auto"
    with model_load_errors(info.source.name_or_path):
        model = _from_pretrained(info, attn_implementation, kwargs)
    if "device_map" not in kwargs:
        model.to(info.device)
    return wrap_model(info, model)


def _from_pretrained(info: ModelInfo, attn_implementation: str, kwargs: dict[str, Any]) -> Any:
    """The causal LM (or VLM), with the first attention kernel in ATTENTION_FALLBACK order its architecture has."""
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    auto_class = AutoModelForImageTextToText if info.is_multimodal else AutoModelForCausalLM
    while True:
        try:
            with MODEL_LOAD_LOCK:
                return auto_class.from_pretrained(
                    info.source.local_dir, attn_implementation=attn_implementation, **kwargs
                )
        except (ValueError, ImportError) as exc:
            # An architecture without this attention kernel falls back to the next one; other errors surface.
            message = str(exc).lower()
            if attn_implementation not in ATTENTION_FALLBACK or not ("attn" in message or "attention" in message):
                raise
            attn_implementation = ATTENTION_FALLBACK[attn_implementation]


def wrap_model(info: ModelInfo, model: Any) -> LoadedModel:
    """An already-built causal LM or VLM (on its device) ready for scoring: eval mode, decoder blocks located.

    A VLM's blocks are its language model's (get_decoder()), never the vision tower's.
    """
    model.eval()
    return LoadedModel(
        info=info,
        model=model,
        blocks=find_decoder_blocks(model.get_decoder() if info.is_multimodal else model, info.n_layers),
        input_device=model.get_input_embeddings().weight.device,
        supports_logits_to_keep="logits_to_keep" in inspect.signature(model.forward).parameters,
    )


def _has_accelerate() -> bool:
    try:
        import accelerate  # noqa: F401
    except ImportError:
        return False
    return True


def load_causal_lm(
    name_or_path: str | Path, trust_remote_code: bool = False, dtype: torch.dtype = torch.float32,
    allow_pickle: bool = False,
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Model (eval mode) and tokenizer from an installed model's name, a local folder or the local HF cache.

    Never the network. A local folder is held to `checked_weights` (safetensors unless pickle is allowed).
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    name_or_path = installed_model_path(name_or_path)
    path = Path(name_or_path)
    use_safetensors = None
    if path.is_dir():
        use_safetensors = checked_weights(path, allow_pickle)[0].suffix == ".safetensors"
    with model_load_errors(str(name_or_path)):
        tokenizer = AutoTokenizer.from_pretrained(str(name_or_path), local_files_only=True,
                                                  trust_remote_code=trust_remote_code)
        with MODEL_LOAD_LOCK:
            model = AutoModelForCausalLM.from_pretrained(
                str(name_or_path), local_files_only=True, trust_remote_code=trust_remote_code,
                dtype=dtype, use_safetensors=use_safetensors,
            )
    return model.eval(), tokenizer


def random_init_like(name_or_path: str | Path, seed: int = 0, trust_remote_code: bool = False) -> PreTrainedModel:
    """The same architecture as `name_or_path` with freshly initialised weights (seeded)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    name_or_path = installed_model_path(name_or_path)
    with model_load_errors(str(name_or_path)):
        config = AutoConfig.from_pretrained(str(name_or_path), local_files_only=True,
                                            trust_remote_code=trust_remote_code)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, trust_remote_code=trust_remote_code)
    return model.float().eval()
