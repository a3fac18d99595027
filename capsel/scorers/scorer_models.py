"""The local encoders and raters behind baseline scorers, described and loaded offline."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch import nn

from capsel.errors import CapselError
from capsel.models.devices import DTYPES, resolve_device, resolve_dtype
from capsel.models.load_errors import model_load_errors
from capsel.models.load_lock import MODEL_LOAD_LOCK
from capsel.models.source import ModelSource, resolve_model
from capsel.scorers.base import ScorerIdentity


@dataclass(frozen=True)
class LocalModel:
    """An encoder or rater folder with its fingerprint, tokenizer and config (weights not loaded yet)."""

    source: ModelSource
    dtype: str
    device: str
    tokenizer: Any  # a transformers tokenizer; its type depends on the checkpoint
    config: object
    trust_remote_code: bool

    @property
    def identity(self) -> ScorerIdentity:
        """Its `models` row; the fingerprint hashes weights, config, tokenizer files and dtype."""
        return ScorerIdentity(
            fingerprint=self.source.fingerprint(self.dtype), name_or_path=self.source.name_or_path,
            revision=None, weight_files=self.source.files, dtype=self.dtype,
            architecture=(getattr(self.config, "architectures", None) or [type(self.config).__name__])[0],
            n_layers=getattr(self.config, "num_hidden_layers", None),
        )


def describe_local_model(
    path: str | Path, role: str, dtype: str = "auto", device: str = "auto", trust_remote_code: bool = False,
    allow_pickle: bool = False,
) -> LocalModel:
    """Fingerprint a local model folder and load its tokenizer and config; never reaches a hub.

    `role` ("encoder", "rater") only words the error when the folder is missing.
    """
    from transformers import AutoConfig, AutoTokenizer

    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise CapselError(f"the {role} {str(path)!r} is not a local model folder (config, tokenizer, weights)")
    source = resolve_model(str(folder), allow_pickle=allow_pickle)
    device = resolve_device(device)
    kwargs = {"trust_remote_code": trust_remote_code, "local_files_only": True}
    with model_load_errors(str(path)):
        tokenizer = AutoTokenizer.from_pretrained(source.local_dir, **kwargs)
        config = AutoConfig.from_pretrained(source.local_dir, **kwargs)
    return LocalModel(source=source, dtype=resolve_dtype(dtype, device), device=device, tokenizer=tokenizer,
                      config=config, trust_remote_code=trust_remote_code)


def load_local_model(local: LocalModel, auto_class) -> nn.Module:
    """Load the weights with a transformers Auto class (safetensors when present), in eval mode."""
    with MODEL_LOAD_LOCK, model_load_errors(local.source.name_or_path):
        model = auto_class.from_pretrained(
            local.source.local_dir, dtype=DTYPES[local.dtype], trust_remote_code=local.trust_remote_code,
            use_safetensors=local.source.uses_safetensors, local_files_only=True,
        )
    return model.eval().to(local.device)
