"""What `capsel evaluate` evaluates: a fine-tuned model (full weights or a LoRA adapter) or a base model."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import orjson

from capsel.db.records import fetch_records
from capsel.errors import CapselError
from capsel.versioning import config_hash, file_sha256

if TYPE_CHECKING:  # loading models imports torch: naming a target (base:MODEL) must not
    from capsel.models.loading import LoadedModel

BASE_PREFIX = "base:"
ADAPTER_WEIGHTS = "adapter_model.safetensors"


@dataclass(frozen=True)
class EvalTarget:
    """The weights one evaluation runs: `model_dir` alone, or the base model with the adapter in `adapter_dir`."""

    label: str
    finetune_id: str | None
    base_model: str
    base_fingerprint: str
    model_dir: Path
    adapter_dir: Path | None
    model_fingerprint: str
    selection_id: str | None = None


def base_target(label: str, model: str, dtype: str = "auto", device: str = "auto") -> EvalTarget:
    """`base:MODEL`: the model before SFT, as named (an installed model's name or a folder)."""
    from capsel.models.loading import describe_model

    info = describe_model(model, dtype=dtype, device=device)
    return EvalTarget(label, None, model, info.fingerprint, info.source.local_dir, None, info.fingerprint)


def finetune_target(con: duckdb.DuckDBPyConnection, finetune_id: str, dtype: str = "auto",
                    device: str = "auto") -> EvalTarget:
    """A recorded fine-tune; its folder must still hold the model."""
    rows = fetch_records(con, "evaluation/finetune_by_id", {"finetune_id": finetune_id})
    if not rows:
        raise CapselError(f"no fine-tune {finetune_id!r} in this database; `capsel evaluations` and `capsel "
                          "lineage <selection_id>` list them, `capsel finetune` makes one")
    return target_of_model_dir(finetune_id, rows[0]["base_model"], Path(rows[0]["model_dir"]), dtype, device,
                               finetune_id=finetune_id, selection_id=rows[0]["selection_id"])


def target_of_model_dir(label: str, base_model: str, model_dir: Path, dtype: str = "auto", device: str = "auto",
                        *, finetune_id: str | None = None, selection_id: str | None = None) -> EvalTarget:
    """The weights in a fine-tune's folder: an adapter on `base_model`, or a whole model."""
    from capsel.models.loading import describe_model

    if not model_dir.is_dir():
        raise CapselError(f"{label}: its model folder {model_dir} is gone; run `capsel finetune` again to rebuild it")
    base = describe_model(base_model, dtype=dtype, device=device)
    if (model_dir / "adapter_config.json").is_file():
        weights = model_dir / ADAPTER_WEIGHTS
        if not weights.is_file():
            raise CapselError(f"{label}: {model_dir} holds adapter_config.json but no {ADAPTER_WEIGHTS}")
        fingerprint = config_hash({"base": base.fingerprint, "adapter": file_sha256(weights),
                                   "adapter_config": orjson.loads((model_dir / "adapter_config.json").read_bytes())})
        return EvalTarget(label, finetune_id, base_model, base.fingerprint, base.source.local_dir, model_dir,
                          fingerprint, selection_id)
    tuned = describe_model(str(model_dir), dtype=dtype, device=device)
    return EvalTarget(label, finetune_id, base_model, base.fingerprint, model_dir, None, tuned.fingerprint,
                      selection_id)


def load_target(target: EvalTarget, dtype: str = "auto", device: str = "auto") -> LoadedModel:
    """The target's weights loaded for scoring; an adapter is merged into its base model first."""
    from capsel.models.loading import describe_model, load_model, wrap_model

    info = describe_model(str(target.model_dir), dtype=dtype, device=device)
    loaded = load_model(info)
    if target.adapter_dir is None:
        return loaded
    from peft import PeftModel

    with warnings.catch_warnings():
        # peft asks the model for transformers' deprecated is_gradient_checkpointing: nothing for a user to act on
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        merged = PeftModel.from_pretrained(loaded.model, str(target.adapter_dir)).merge_and_unload()
    return wrap_model(info, merged)
