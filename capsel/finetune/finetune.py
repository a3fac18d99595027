"""Fine-tune a base model on a published selection with LlamaFactory, into a finished model folder (or reuse one)."""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional, cast

from capsel.errors import CapselError
from capsel.finetune.model_folder import (
    create_staging,
    final_dir,
    publish_model,
    read_finished,
    remove_abandoned_staging,
)
from capsel.finetune.prompt_template import TrainingPrompt, training_prompt
from capsel.finetune.recipe import ResolvedRecipe, read_user_config, resolve_recipe
from capsel.finetune.request import FinetunedModel, FinetuneRequest, finetune_id
from capsel.finetune.schedule import AUTO, Schedule, check_learns, epochs_reaching, schedule
from capsel.finetune.trainer_run import (
    TRAINER_LOG,
    ProgressCallback,
    logged_training,
    no_progress,
    run_training,
    trainer_versions,
    write_config,
)
from capsel.versioning import code_version

CONFIG_FILE, LOG_FILE = "llamafactory.yaml", "train.log"
_OUTPUT, _CACHE = "lf-output", "cache"  # inside the staging folder; the output's files move up, both then go
# LlamaFactory's own leftovers that are no part of a model: the pickled TrainingArguments and a duplicate.
_DROPPED = ("training_args.bin", "all_results.json")
_SHARDED_INDEX = "model.safetensors.index.json"  # a large full model is saved in shards


@dataclass(frozen=True)
class _Plan:
    """What a request resolves to before anything trains: the recipe, the model's id and its folder."""

    dataset: str
    n_rows: int
    prompt: TrainingPrompt
    recipe: ResolvedRecipe
    schedule: Schedule
    model_id: str
    final: Path


def _plan(request: FinetuneRequest) -> _Plan:
    dataset, n_rows = selection_dataset(request.selection_dir)
    prompt = training_prompt(request.prompt_format, request.base_model_dir)
    user_config = read_user_config(request.config_file) if request.config_file is not None else {}
    epochs: int | None
    if request.epochs == AUTO:
        own = resolve_recipe(request.profile, user_config, seed=request.seed, template=prompt.template)
        epochs = epochs_reaching(own.args, n_rows, request.min_steps)
    else:
        epochs = cast(Optional[int], request.epochs)
    recipe = resolve_recipe(request.profile, user_config, seed=request.seed, template=prompt.template,
                            epochs=epochs)
    planned = schedule(recipe.args, n_rows)
    check_learns(planned, recipe.args, request.min_steps, f"the selection {request.selection_id}")
    model_id = finetune_id(request, recipe.config_hash)
    return _Plan(dataset, n_rows, prompt, recipe, planned, model_id, final_dir(request.models_root, model_id))


def finished_finetune(request: FinetuneRequest) -> FinetunedModel | None:
    """The finished model `request` names, when its folder is already there (nothing trains, nothing is removed)."""
    plan = _plan(request)
    finished = read_finished(plan.final)
    return FinetunedModel(plan.model_id, plan.final, finished, reused=True) if finished is not None else None


def run_finetune(request: FinetuneRequest, python: Path, on_progress: ProgressCallback = no_progress) -> FinetunedModel:
    """Train (or reuse) the model `request` names; `on_progress(step, total, loss, eta_s)` follows the training."""
    plan = _plan(request)
    dataset, n_rows, prompt, recipe, model_id, final = (plan.dataset, plan.n_rows, plan.prompt, plan.recipe,
                                                        plan.model_id, plan.final)
    remove_abandoned_staging(request.models_root)
    finished = read_finished(final)
    if finished is not None:
        return FinetunedModel(model_id, final, finished, reused=True)
    if final.exists():
        raise CapselError(f"{final} exists but is not a finished capsel model (no readable manifest.json); "
                          f"move it away to train {model_id}")
    versions = trainer_versions(python)
    staging = create_staging(request.models_root, model_id)
    args = recipe.llamafactory_args(model_dir=request.base_model_dir, dataset=dataset,
                                    dataset_dir=request.selection_dir, output_dir=staging / _OUTPUT,
                                    cache_dir=staging / _CACHE)
    write_config(args, staging / CONFIG_FILE)
    started = time.monotonic()
    try:
        run_training(python, staging / CONFIG_FILE, staging / _OUTPUT, staging / LOG_FILE, staging / _CACHE,
                     on_progress, request.threads)
    finally:
        shutil.rmtree(staging / _CACHE, ignore_errors=True)  # a failed run keeps its log and YAML, not caches
    seconds = time.monotonic() - started
    results = collect_output(staging, recipe)
    manifest = {
        "finetune_id": model_id,
        "selection_id": request.selection_id,
        "members_sha256": request.members_sha256,
        "base_model": {"path": str(request.base_model_dir), "fingerprint": request.base_fingerprint},
        "trainer": {"name": "llamafactory", "version": versions["llamafactory"],
                    "versions": versions},
        "config_hash": recipe.config_hash,
        "config": args,
        "seed": request.seed,
        "profile": recipe.profile,
        "prompt_format": prompt.prompt_format,
        "template": prompt.template,
        "kind": "adapter" if recipe.is_adapter else "full",
        "train_loss": results.get("train_loss"),
        "schedule": plan.schedule.as_dict(),
        "trained": logged_training(staging / TRAINER_LOG),
        "train_seconds": round(seconds, 2),
        "n_rows": n_rows,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "capsel_version": code_version(),
    }
    if not publish_model(staging, manifest, final):
        manifest = read_finished(final) or manifest
        return FinetunedModel(model_id, final, manifest, reused=True)
    return FinetunedModel(model_id, final, manifest, reused=False)


def selection_dataset(selection_dir: Path) -> tuple[str, int]:
    """The dataset name a published folder declares to LlamaFactory and the number of rows of its file."""
    try:
        info = json.loads((selection_dir / "dataset_info.json").read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise CapselError(f"{selection_dir} is not a published selection (dataset_info.json: {exc})") from exc
    if not isinstance(info, dict) or len(info) != 1:
        raise CapselError(f"{selection_dir}/dataset_info.json should declare exactly one dataset")
    (name, entry), = info.items()
    if not isinstance(entry, dict) or not isinstance(entry.get("file_name"), str):
        raise CapselError(f"{selection_dir}/dataset_info.json names no file_name for {name}")
    data_file = selection_dir / entry["file_name"]
    try:
        with open(data_file, "rb") as handle:
            n_rows = sum(1 for line in handle if line.strip())
    except OSError as exc:
        raise CapselError(f"cannot read the selection's rows {data_file}: {exc}") from exc
    if n_rows == 0:
        raise CapselError(f"the selection {selection_dir} has no rows to train on")
    return name, n_rows


def collect_output(staging: Path, recipe: ResolvedRecipe) -> dict:
    """Move LlamaFactory's output up into the model folder, check the weights are there; return its train results."""
    output = staging / _OUTPUT
    for path in sorted(output.iterdir()):
        if path.name not in _DROPPED:
            path.rename(staging / path.name)
    shutil.rmtree(output)
    weights = ["adapter_model.safetensors"] if recipe.is_adapter else ["model.safetensors", _SHARDED_INDEX]
    if not any((staging / name).is_file() for name in weights):
        raise CapselError(f"LlamaFactory finished without saving {' or '.join(weights)}; see {staging / LOG_FILE}")
    if not (staging / TRAINER_LOG).is_file():
        raise CapselError(f"LlamaFactory finished without its {TRAINER_LOG}; see {staging / LOG_FILE}")
    try:
        return json.loads((staging / "train_results.json").read_text())
    except (OSError, json.JSONDecodeError):
        return {}
