"""Stage: fine-tune a base model on a published selection with LlamaFactory and record the model it made."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import orjson

from capsel.db import run_sql
from capsel.db.progress_file import report_progress, report_stage
from capsel.db.records import fetch_records
from capsel.errors import CapselError
from capsel.finetune.schedule import MIN_STEPS, Epochs
from capsel.models.loading import describe_model
from capsel.publish.destination import destination
from capsel.runs import recorded_run
from capsel.side_environments import TRAINER
from capsel.stages.context import RunContext


@dataclass(frozen=True)
class FinetuneStageRequest:
    """Which selection, which base model, which recipe (profile + the user's LlamaFactory YAML) and seed."""

    selection_id: str
    model: str
    out_root: Path
    profile: str = "cpu-small"
    config_file: Path | None = None
    seed: int = 0
    prompt_format: str = "auto"
    epochs: Epochs = None
    min_steps: int = MIN_STEPS


@dataclass
class FinetuneSummary:
    """The model folder, its id and manifest; `reused` when an identical fine-tune was already there."""

    finetune_id: str
    model_dir: Path
    manifest: dict
    reused: bool
    run_id: str | None = None

    def as_dict(self) -> dict:
        """What `capsel finetune --json` prints."""
        return {"finetune_id": self.finetune_id, "model_dir": str(self.model_dir), "reused": self.reused,
                "run_id": self.run_id, "manifest": self.manifest}


def selection_folder(ctx: RunContext, selection_id: str) -> tuple[Path, dict]:
    """The published selection's local folder and manifest; a missing or remote one is a one-line error."""
    rows = fetch_records(ctx.con, "lineage/lineage_selection", {"selection_id": selection_id})
    if not rows:
        raise CapselError(f"no published selection {selection_id!r} in this database; `capsel selections` "
                          "lists them")
    folder = destination(rows[0]["out_dir"])  # the published folder itself
    if not isinstance(folder, Path):
        raise CapselError(f"selection {selection_id} was published to {folder}; fine-tuning reads a local folder: "
                          "publish it to a local --out too")
    if not (folder / "dataset_info.json").is_file():
        raise CapselError(f"selection {selection_id}: {folder} holds no dataset_info.json (moved or deleted?)")
    manifest = orjson.loads((folder / "manifest.json").read_bytes())
    return folder, manifest


def finetune_selection(request: FinetuneStageRequest, ctx: RunContext) -> FinetuneSummary:
    """The model fine-tuned on the selection: an identical finished one is reused, else LlamaFactory trains it
    (its logged steps go to `ctx.on_training`)."""
    from capsel.finetune import FinetuneRequest, finished_finetune, run_finetune

    folder, manifest = selection_folder(ctx, request.selection_id)
    base = describe_model(request.model)
    wanted = FinetuneRequest(
        selection_dir=folder, selection_id=request.selection_id, members_sha256=manifest["members_sha256"],
        base_model_dir=base.source.local_dir, base_fingerprint=base.fingerprint,
        models_root=request.out_root / "models", profile=request.profile, config_file=request.config_file,
        seed=request.seed, prompt_format=request.prompt_format, threads=ctx.settings.threads,
        epochs=request.epochs, min_steps=request.min_steps,
    )
    finished = finished_finetune(wanted)
    if finished is not None and fetch_records(ctx.con, "evaluation/finetune_by_id",
                                              {"finetune_id": finished.finetune_id}):
        return FinetuneSummary(finished.finetune_id, finished.model_dir, finished.manifest, reused=True)
    python = TRAINER.python(ctx.settings.trainer_python)
    counters: dict = {"selection_id": request.selection_id}
    with recorded_run(ctx.con, "finetune", counters, config={"request": _request_record(request)},
                      model_fingerprint=base.fingerprint, parent_run_id=ctx.parent_run_id,
                      prefect_flow_run_id=ctx.prefect_flow_run_id) as run_id:
        report_stage(f"finetune {request.selection_id}", run_id, unit="steps")

        def progress(step: int, total: int, loss: float | None, eta: float | None) -> None:
            report_progress(step, total)
            ctx.on_training(step, total, loss, eta)

        model = run_finetune(wanted, python, on_progress=progress)
        counters.update(finetune_id=model.finetune_id, reused=model.reused)
        record_finetune(ctx, request, model.manifest, model.model_dir, run_id)
    return FinetuneSummary(model.finetune_id, model.model_dir, model.manifest, model.reused, run_id)


def record_finetune(ctx: RunContext, request: FinetuneStageRequest, manifest: dict, model_dir: Path,
                    run_id: str) -> None:
    """The finished model's row in `finetunes` (kept as it was when an identical one is there already)."""
    trainer = manifest["trainer"]
    run_sql(ctx.con, "evaluation/finetune_insert", {
        "finetune_id": manifest["finetune_id"], "selection_id": request.selection_id,
        "members_sha256": manifest["members_sha256"], "base_model": request.model,
        "base_fingerprint": manifest["base_model"]["fingerprint"], "profile": manifest["profile"],
        "config_hash": manifest["config_hash"], "config": orjson.dumps(manifest["config"]).decode(),
        "seed": manifest["seed"], "trainer": f"{trainer['name']} {trainer['version']}",
        "is_adapter": manifest["kind"] == "adapter", "model_dir": str(model_dir),
        "train_loss": manifest.get("train_loss"), "train_seconds": manifest.get("train_seconds"),
        "n_rows": manifest.get("n_rows"), "run_id": run_id,
    })


def _request_record(request: FinetuneStageRequest) -> dict:
    return {"selection_id": request.selection_id, "model": request.model, "out_root": str(request.out_root),
            "profile": request.profile, "config_file": str(request.config_file) if request.config_file else None,
            "seed": request.seed, "prompt_format": request.prompt_format, "epochs": request.epochs,
            "min_steps": request.min_steps}
