"""Prefect artifacts of a flow run: summary, selection and ingest tables, scoring progress, links, gate failures."""

from __future__ import annotations

from pathlib import Path
from typing import cast
from uuid import UUID

from prefect.artifacts import (
    create_link_artifact,
    create_markdown_artifact,
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)
from prefect.logging import get_run_logger
from prefect.runtime import deployment

from capsel.config import Settings
from capsel.evaluation.comparison import by_method, comparison_figure, metric_rows
from capsel.evaluation.paired import comparisons_among
from capsel.orchestration.artifact_keys import ArtifactKeys
from capsel.orchestration.links import browser_link
from capsel.orchestration.paired_markdown import paired_markdown
from capsel.orchestration.run_report import FlowReport, gate_failure_markdown, ingest_rows, summary_markdown
from capsel.orchestration.summary_plots import png_markdown
from capsel.publish.destination import Destination
from capsel.publish.publish import GateFailedError
from capsel.publish.report import png_bytes
from capsel.runner.progress import BatchReport


def artifact_keys(flow_key: str, settings: Settings) -> ArtifactKeys:
    """The keys of this flow run's artifacts: its flow, its deployment (if any) and its pool."""
    return ArtifactKeys(flow_key, settings.db_path, deployment.name)


def start_progress(keys: ArtifactKeys) -> UUID:
    """The scoring progress artifact, made on the run the user opens; the scoring subflow moves it on by id."""
    # called from the flow's own (synchronous) code, so Prefect returns the id, not a coroutine
    return cast(UUID, create_progress_artifact(0.0, key=keys.key("progress"), description="scoring: not started"))


class ProgressArtifact:
    """A scoring progress sink that keeps a Prefect progress artifact (percent of pending candidates) current.

    Given an `artifact_id` (the parent flow's), it updates that one; otherwise it creates its own under `key`.
    """

    def __init__(self, description: str, key: str, artifact_id: UUID | None = None):
        self.description = description
        self.key = key
        self.artifact_id = artifact_id
        self.total = 0
        self.done = 0

    def start(self, total: int) -> None:
        """Create the artifact (or reset the parent's) sized to the pending work."""
        self.total = total
        progress = 0.0 if total else 100.0
        if self.artifact_id is None:
            self.artifact_id = cast(UUID, create_progress_artifact(progress, key=self.key,
                                                                   description=self.description))
        else:
            update_progress_artifact(self.artifact_id, progress=progress, description=self.description)
        get_run_logger().info("scoring %d pending candidates", total)

    def advance(self, report: BatchReport) -> None:
        """Move the artifact on by one merged shard and log it."""
        self.done += report.n_candidates
        assert self.artifact_id is not None  # the runner starts a sink before it advances it
        update_progress_artifact(self.artifact_id, progress=round(100.0 * self.done / max(self.total, 1), 2))
        # short enough for an 80-column terminal after the time stamp; the reasons are in the run's summary
        get_run_logger().info("merged a shard: %d/%d (%d measured, %d excluded)", self.done, self.total,
                              report.n_done, report.n_candidates - report.n_done)


def publish_run_artifacts(report: FlowReport, keys: ArtifactKeys, settings: Settings) -> None:
    """The summary markdown and the ingest table; with a published selection also its table and file links."""
    create_markdown_artifact(summary_markdown(report), key=keys.key("summary"), description="capsel run summary")
    if report.ingest is not None:
        create_table_artifact(ingest_rows(report.ingest), key=keys.key("ingest"),
                              description="ingest counts per domain")
    if report.published is None:
        return
    published = report.published
    create_table_artifact(report.members, key=keys.key("selection"),
                          description=f"members of {published.selection_id}")
    for name, relative in (("report", "report/index.html"), ("gate", "gate/index.html"),
                           ("manifest", "manifest.json"), ("data", "data.jsonl")):
        create_link_artifact(
            _link(published.path, relative, settings),
            link_text=f"{published.selection_id} {name}", key=keys.key(name),
            description=f"published selection {name}",
        )


def publish_gate_failure(run_id: str, error: GateFailedError, keys: ArtifactKeys, settings: Settings) -> None:
    """Log every failing expectation, then keep them as markdown and link the gate report that was kept."""
    logger = get_run_logger()
    for failure in error.gate.failures:
        logger.error("gate failure: %s", failure)
    gate_index = f"{error.kept_at}/gate/index.html"
    create_markdown_artifact(
        gate_failure_markdown(run_id, error.gate.failures, gate_index), key=keys.key("gate-failure"),
        description="data-quality gate failures",
    )
    create_link_artifact(
        _link(error.kept_at, "gate/index.html", settings),
        link_text="rejected selection: gate report", key=keys.key("gate-report"),
    )


def publish_evaluation_artifacts(con, targets: list[str], keys: ArtifactKeys) -> None:
    """Each metric by method (mean ± std over seeds, the base model and full pool as reference rows), as a table,
    and as a plot in a markdown artifact."""
    rows = metric_rows(con, targets)
    table = by_method(rows)
    create_table_artifact(table.to_dict(orient="records"), key=keys.key("evaluation"),
                          description="evaluation metrics by method (mean and std over seeds)")
    create_table_artifact(rows.drop(columns=["label"]).to_dict(orient="records"), key=keys.key("evaluation-runs"),
                          description="every fine-tuned model's metrics")
    lines = ["# Does the selection train a better model?", "",
             "Each bar is one method's selection fine-tuned (mean ± std over seeds); the dashed line is the base "
             "model before SFT.", ""]
    if not table.empty:
        lines.append(png_markdown(png_bytes(comparison_figure(table), 80), "evaluation metrics by method"))
    create_markdown_artifact("\n".join(lines), key=keys.key("evaluation-summary"),
                             description="evaluation metrics by method, plotted")
    paired = comparisons_among(con, targets)
    if paired:
        create_table_artifact([comparison.as_dict() for comparison in paired], key=keys.key("evaluation-paired"),
                              description=f"each selection against {paired[0].against}: delta, paired 95% CI")
        create_markdown_artifact(paired_markdown(paired), key=keys.key("evaluation-forest"),
                                 description="paired comparisons, plotted")


def _link(folder: Destination, relative: str, settings: Settings) -> str:
    """A browser link to a file of a published (or rejected) folder; a storage URL is linked as it is."""
    if isinstance(folder, Path):
        return browser_link(folder / relative, settings.output_root, settings.outputs_url)
    return f"{folder}/{relative}"
