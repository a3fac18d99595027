"""Training recipes: a named profile, a user's LlamaFactory YAML over it, and capsel's own keys -> LlamaFactory args.

The `paper` profile is the paper's SFT configuration (appendix "SFT configuration"): full-parameter SFT,
AdamW, peak lr 1e-5, cosine, warmup ratio 0.03, one epoch, effective batch 64, bf16, cutoff 2048, no packing.
`cpu-small` is capsel's own for a ~100M-parameter model on a few CPU cores: LoRA (rank 16) on every linear layer
in float32, cutoff 512, effective batch 8 as 1 row x 8 accumulated, a LoRA-sized learning rate, no gradient
checkpointing (docs/closed-loop.md, "Fine-tuning", has its measured cost).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from capsel.errors import CapselError, OptionError
from capsel.versioning import config_hash

PAPER, CPU_SMALL = "paper", "cpu-small"
ADAPTER_TYPES = ("lora", "oft")  # LlamaFactory's finetuning types that save a peft adapter, not the weights

# What every run shares: supervised fine-tuning, one final save and no checkpoints, nothing reported anywhere.
_COMMON: dict[str, Any] = {
    "stage": "sft",
    "do_train": True,
    "optim": "adamw_torch",
    "lr_scheduler_type": "cosine",
    "warmup_ratio": 0.03,
    "num_train_epochs": 1.0,
    "packing": False,
    "logging_steps": 1,
    "plot_loss": False,
    "overwrite_cache": True,
    "preprocessing_num_workers": 1,
    "dataloader_num_workers": 0,
}

PROFILES: dict[str, dict[str, Any]] = {
    PAPER: {
        **_COMMON,
        "finetuning_type": "full",
        "learning_rate": 1.0e-5,
        "per_device_train_batch_size": 8,
        "gradient_accumulation_steps": 8,  # 8 x 8 = the paper's effective batch of 64 on one device
        "bf16": True,
        "cutoff_len": 2048,
    },
    CPU_SMALL: {
        **_COMMON,
        "finetuning_type": "lora",
        "lora_target": "all",
        "lora_rank": 16,
        "lora_alpha": 32,
        "lora_dropout": 0.0,
        "learning_rate": 2.0e-4,
        # one row at a time: no compute spent on padding, which a CPU pays for in full
        "per_device_train_batch_size": 1,
        "gradient_accumulation_steps": 8,
        "bf16": False,
        "fp16": False,
        "cutoff_len": 512,
        # a small model's activations fit; recomputing them (LlamaFactory's default) costs a third more time
        "disable_gradient_checkpointing": True,
        "dataloader_pin_memory": False,
    },
}

# Keys capsel sets from the request itself (or that the runner relies on): a user's YAML may not change them.
CAPSEL_OWNED = (
    "model_name_or_path", "dataset", "dataset_dir", "output_dir", "seed", "template",
    "stage", "do_train", "save_strategy", "report_to", "cache_dir",
)


@dataclass(frozen=True)
class ResolvedRecipe:
    """The LlamaFactory args of a run before its paths are known, the profile they start from, and their hash."""

    profile: str
    args: dict[str, Any]
    config_hash: str

    @property
    def is_adapter(self) -> bool:
        """True when the run trains a peft adapter (LoRA, OFT) rather than the model's own weights."""
        return self.args.get("finetuning_type", "lora") in ADAPTER_TYPES  # LlamaFactory's default is lora

    def llamafactory_args(self, *, model_dir: Path, dataset: str, dataset_dir: Path, output_dir: Path,
                          cache_dir: Path) -> dict[str, Any]:
        """The full args with this run's paths: what the LlamaFactory YAML holds."""
        paths = {"model_name_or_path": str(model_dir), "dataset_dir": str(dataset_dir),
                 "output_dir": str(output_dir), "cache_dir": str(cache_dir)}
        return {**self.args, **paths, "dataset": dataset}


def read_user_config(path: Path) -> dict[str, Any]:
    """A user's LlamaFactory YAML as a dict; capsel-owned keys in it are refused in one line."""
    try:
        loaded = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise CapselError(f"cannot read the training config {path}: {exc}") from exc
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise OptionError(f"the training config {path} must be a YAML mapping of LlamaFactory arguments")
    owned = sorted(key for key in loaded if key in CAPSEL_OWNED)
    if owned:
        raise OptionError(f"the training config {path} sets {', '.join(owned)}, which capsel sets itself "
                          f"from the selection, the base model and [[seed]]; remove them")
    return loaded


def resolve_recipe(profile: str, user_config: dict[str, Any], *, seed: int, template: str | None,
                   epochs: int | None = None) -> ResolvedRecipe:
    """Profile, then the user's keys, then `epochs` when given, then capsel's own (paths come per run and stay out
    of the hash).

    `template` None means the tokenizer's own chat template, which LlamaFactory parses itself.
    """
    if profile not in PROFILES:
        raise OptionError(f"unknown training profile {profile!r}; use {' or '.join(PROFILES)}")
    args = {**PROFILES[profile], **user_config}
    if epochs is not None:
        args["num_train_epochs"] = float(epochs)
    args.update(seed=seed, template=template, save_strategy="no", report_to="none")
    return ResolvedRecipe(profile, args, config_hash(args))
