"""Loading a local causal LM and its tokenizer safely: offline, safetensors first, no remote code."""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from capsel.errors import CapselError
from capsel.models.installed import installed_model_path
from capsel.models.load_lock import MODEL_LOAD_LOCK


def load_causal_lm(
    name_or_path: str | Path, trust_remote_code: bool = False, dtype: torch.dtype = torch.float32
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Model (eval mode) and tokenizer from an installed model's name, a local folder or the local HF cache.

    Never the network.
    """
    name_or_path = installed_model_path(name_or_path)
    path = Path(name_or_path)
    # refuse pickled weights when safetensors exist; transformers falls back to .bin only without them
    use_safetensors = True if path.is_dir() and any(path.glob("*.safetensors")) else None
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(name_or_path), local_files_only=True,
                                                  trust_remote_code=trust_remote_code)
        with MODEL_LOAD_LOCK:
            model = AutoModelForCausalLM.from_pretrained(
                str(name_or_path), local_files_only=True, trust_remote_code=trust_remote_code,
                dtype=dtype, use_safetensors=use_safetensors,
            )
    except (OSError, ValueError) as exc:
        raise CapselError(f"cannot load model {str(name_or_path)!r} locally: {exc}") from exc
    return model.eval(), tokenizer


def random_init_like(name_or_path: str | Path, seed: int = 0, trust_remote_code: bool = False) -> PreTrainedModel:
    """The same architecture as `name_or_path` with freshly initialised weights (seeded)."""
    name_or_path = installed_model_path(name_or_path)
    try:
        config = AutoConfig.from_pretrained(str(name_or_path), local_files_only=True,
                                            trust_remote_code=trust_remote_code)
    except (OSError, ValueError) as exc:
        raise CapselError(f"cannot read the config of {str(name_or_path)!r}: {exc}") from exc
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, trust_remote_code=trust_remote_code)
    return model.float().eval()
