"""OpenLineage events of the evaluation flow's stages, sent when each ends (an outage never fails the run)."""

from __future__ import annotations

from pathlib import Path

from prefect.logging import get_run_logger
from prefect.runtime import flow_run

from capsel.config import Settings
from capsel.lineage.openlineage_events import ParentJob, event_emitter
from capsel.lineage.stage_events import StageDatasets, stage_event
from capsel.runs import new_run_id
from capsel.stages.context import RunContext
from capsel.stages.evaluate import EvaluateRequest, EvaluateSummary
from capsel.stages.finetune import FinetuneStageRequest, FinetuneSummary, selection_folder


class StageLineage:
    """Sends one COMPLETE event per fine-tune (selection folder in, model folder out) and per evaluation run
    (model folders and evaluation files in, the `evaluations` table out), under the Prefect flow run."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.emit = event_emitter(settings.openlineage_transport, settings.output_root, settings.openlineage_file,
                                  settings.openlineage_url)
        self.parent = ParentJob(settings.openlineage_namespace, flow_run.flow_name, flow_run.id)
        self.models: list[tuple[str, str | None]] = []  # each fine-tuned model's folder and id, as the stage gave it

    def finetuned(self, ctx: RunContext, request: FinetuneStageRequest, model: FinetuneSummary) -> None:
        """The fine-tune read the selection's folder and wrote the model's."""
        selection_id = request.selection_id
        folder, _ = selection_folder(ctx, selection_id)
        self.models.append((str(model.model_dir), model.finetune_id))
        self._send("capsel.finetune", model.run_id, StageDatasets(
            inputs=[(str(folder), selection_id)], outputs=[(str(model.model_dir), model.finetune_id)]))

    def evaluated(self, ctx: RunContext, request: EvaluateRequest, summary: EvaluateSummary) -> None:
        """The evaluation read the fine-tuned models and the evaluation files and wrote the evaluations table."""
        files: list[tuple[str, str | None]] = [(str(spec.source), spec.sha256) for spec in request.evals]
        self._send("capsel.evaluate", summary.run_id, StageDatasets(
            inputs=self.models + files, tables_written=[(Path(self.settings.db_path), "evaluations")]))

    def _send(self, job: str, run_id: str | None, datasets: StageDatasets) -> None:
        if self.emit is None:
            return
        try:
            self.emit(stage_event("COMPLETE", run_id or new_run_id(), job, self.settings.openlineage_namespace,
                                  datasets, self.parent))
        except Exception as exc:  # noqa: BLE001 (lineage is an audit side channel: its outage must not fail the run)
            get_run_logger().warning("OpenLineage event of %s not sent: %s", job, exc)
