"""What a fine-tuning run is asked to do, what it produced, and the id that names it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from capsel.finetune.recipe import CPU_SMALL
from capsel.finetune.schedule import MIN_STEPS, Epochs
from capsel.versioning import canonical_json


@dataclass(frozen=True)
class FinetuneRequest:
    """Fine-tune `base_model_dir` on a published selection with a training profile (and a user's YAML over it)."""

    selection_dir: Path  # the published folder (has dataset_info.json)
    selection_id: str
    members_sha256: str
    base_model_dir: Path  # an HF model folder
    base_fingerprint: str
    models_root: Path  # <out>/models
    profile: str = CPU_SMALL
    config_file: Path | None = None
    seed: int = 0
    prompt_format: str = "auto"  # auto|raw|chat, resolved against the base tokenizer as scoring does
    epochs: Epochs = None  # whole epochs, "auto" (the fewest that reach min_steps) or None (the recipe's)
    min_steps: int = MIN_STEPS  # the fewest steps at a learning rate above zero a run may make
    threads: int | None = None  # the trainer's torch threads (None: every core); no part of the model's identity

    def __post_init__(self) -> None:
        # the trainer runs in the staging folder, so a relative path (the default output root) would point inside it
        for name in ("selection_dir", "base_model_dir", "models_root", "config_file"):
            path = getattr(self, name)
            if path is not None:
                object.__setattr__(self, name, Path(path).absolute())


@dataclass(frozen=True)
class FinetunedModel:
    """A finished model folder: its id, where it is, its manifest, and whether an earlier run had made it."""

    finetune_id: str
    model_dir: Path
    manifest: dict
    reused: bool


def finetune_id(request: FinetuneRequest, resolved_config_hash: str) -> str:
    """`ft-` + a short hash of the selection, its members, the base model, the resolved config and the seed."""
    key = [request.selection_id, request.members_sha256, request.base_fingerprint, resolved_config_hash,
           request.seed]
    return "ft-" + hashlib.sha256(canonical_json(key)).hexdigest()[:16]
