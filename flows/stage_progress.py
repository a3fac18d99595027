"""A Prefect progress artifact and log lines that follow the evaluation flow's stages (training steps, rows)."""

from __future__ import annotations

import time
from typing import cast
from uuid import UUID

from prefect.artifacts import create_progress_artifact, update_progress_artifact
from prefect.logging import get_run_logger

# a log line at most this often per stage: a long training run stays readable in the UI
LOG_INTERVAL_S = 30.0


class StageProgress:
    """One progress artifact moved on by each stage in turn; each stage resets it and names itself."""

    def __init__(self, key: str) -> None:
        self.artifact_id = cast(UUID, create_progress_artifact(0.0, key=key, description="not started"))
        self.description = ""
        self.logged_at = 0.0

    def stage(self, description: str) -> None:
        """A new stage starts at 0%."""
        self.description = description
        update_progress_artifact(self.artifact_id, progress=0.0, description=description)
        get_run_logger().info("%s", description)

    def training(self, step: int, total: int, loss: float | None, eta_s: float | None) -> None:
        """A fine-tune's logged step: percent of steps, and now and then a log line with loss and ETA."""
        extra = (f", loss {loss:.4f}" if loss is not None else "") + (f", ETA {eta_s:.0f} s" if eta_s else "")
        self._update(step, total, f"step {step}/{total}{extra}")

    def counted(self, what: str, done: int, total: int | None) -> None:
        """An evaluation's rows or samples done."""
        self._update(done, total, f"{what}: {done}/{total if total is not None else '?'}")

    def _update(self, done: int, total: int | None, line: str) -> None:
        percent = round(100.0 * done / total, 2) if total else 0.0
        update_progress_artifact(self.artifact_id, progress=percent, description=f"{self.description}: {line}")
        now = time.monotonic()
        if now - self.logged_at >= LOG_INTERVAL_S or (total is not None and done >= total):
            self.logged_at = now
            get_run_logger().info("%s: %s", self.description, line)
