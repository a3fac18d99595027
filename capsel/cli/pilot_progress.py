"""What `capsel pilot` shows while it runs: its lines, a bar over the cells with rate and ETA, a fine-tune's steps."""

from __future__ import annotations

from rich.progress import TaskID

from capsel.cli.progress import LiveBar
from capsel.pilot.run import PilotEvents
from capsel.safe_text import visible
from capsel.terminal_text import plain


class PilotBars(LiveBar):
    """One bar over the pilot's cells (fine-tuned and evaluated), one over the fine-tune under way."""

    unit = "cell"

    def __init__(self) -> None:
        super().__init__("cells fine-tuned")
        self.step_task: TaskID | None = None

    def events(self) -> PilotEvents:
        """The callbacks the pilot reports through."""
        return PilotEvents(say=self._say, on_cells=self._cells, on_training=self._steps)

    def _say(self, line: str) -> None:
        self.progress.console.print(plain(line))

    def _cells(self, done: int, total: int) -> None:
        if self.task is None:
            self.task = self.progress.add_task(visible(self.description), total=total)
        self.progress.update(self.task, completed=done, total=total)

    def _steps(self, step: int, total: int, loss: float | None, eta: float | None) -> None:
        text = "fine-tune steps" if loss is None else f"fine-tune steps (loss {loss:.4f})"
        if self.step_task is None:
            self.step_task = self.progress.add_task(text, total=total)
        self.progress.update(self.step_task, completed=step, total=total, description=text)
