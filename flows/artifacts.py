"""Prefect artifacts of a flow run: summary, selection table, scoring progress, report links, gate failures."""

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

from capsel.orchestration.run_report import FlowReport, gate_failure_markdown, summary_markdown
from capsel.publish.publish import GateFailedError
from capsel.runner.progress import BatchReport


class ProgressArtifact:
    """A scoring progress sink that keeps a Prefect progress artifact (percent of pending candidates) current."""

    def __init__(self, description: str):
        self.description = description
        self.artifact_id: UUID | None = None
        self.total = 0
        self.done = 0

    def start(self, total: int) -> None:
        """Create the artifact sized to the pending work."""
        self.total = total
        # called from the flow's own (synchronous) code, so Prefect returns the id, not a coroutine
        self.artifact_id = cast(UUID, create_progress_artifact(
            progress=0.0 if total else 100.0, key="capsel-scoring-progress", description=self.description
        ))
        get_run_logger().info("scoring %d pending candidates", total)

    def advance(self, report: BatchReport) -> None:
        """Move the artifact on by one merged shard and log it."""
        self.done += report.n_candidates
        assert self.artifact_id is not None  # the runner starts a sink before it advances it
        update_progress_artifact(self.artifact_id, progress=round(100.0 * self.done / max(self.total, 1), 2))
        get_run_logger().info(
            "merged a shard of %d candidates (%d measured, excluded %s): %d/%d",
            report.n_candidates, report.n_done, report.excluded or "none", self.done, self.total,
        )


def publish_run_artifacts(report: FlowReport, flow_key: str) -> None:
    """The summary markdown; with a published selection also its table and links to its files."""
    create_markdown_artifact(summary_markdown(report), key=f"{flow_key}-summary", description="capsel run summary")
    if report.published is None:
        return
    published = report.published
    create_table_artifact(report.members, key=f"{flow_key}-selection",
                          description=f"members of {published.selection_id}")
    for name, relative in (("report", "report/index.html"), ("gate", "gate/index.html"),
                           ("manifest", "manifest.json"), ("data", "data.jsonl")):
        create_link_artifact(
            (published.path / relative).resolve().as_uri(), link_text=f"{published.selection_id} {name}",
            key=f"{flow_key}-{name}", description=f"published selection {name}",
        )


def publish_gate_failure(run_id: str, error: GateFailedError, flow_key: str) -> None:
    """Log every failing expectation, then keep them as markdown and link the GX report that was kept."""
    logger = get_run_logger()
    for failure in error.gate.failures:
        logger.error("gate failure: %s", failure)
    gate_index = Path(error.kept_at) / "gate" / "index.html"
    create_markdown_artifact(
        gate_failure_markdown(run_id, error.gate.failures, str(gate_index)), key=f"{flow_key}-gate-failure",
        description="data-quality gate failures",
    )
    create_link_artifact(
        gate_index.resolve().as_uri(), link_text="rejected selection: GX report", key=f"{flow_key}-gate-report",
    )
