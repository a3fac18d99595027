"""Rich progress on stderr for `capsel models install`: one line per step, with size, rate and ETA where known."""

from __future__ import annotations

from rich.console import Console
from rich.filesize import decimal
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Column
from rich.text import Text


class AmountColumn(ProgressColumn):
    """Done/total in bytes (with speed) or in the step's unit; nothing for a step without a size."""

    def render(self, task: Task) -> Text:
        """The step's amount, formatted for its unit."""
        if task.total is None:
            return Text("")
        unit = task.fields.get("unit", "")
        if unit == "B":
            speed = f" {decimal(int(task.speed))}/s" if task.speed else ""
            return Text(f"{decimal(int(task.completed))}/{decimal(int(task.total))}{speed}", style="progress.download")
        return Text(f"{int(task.completed)}/{int(task.total)} {unit}".rstrip(), style="progress.download")


class RemainingColumn(TimeRemainingColumn):
    """"ETA h:mm:ss" while a sized step runs; nothing for a step without a size or a finished one."""

    def render(self, task: Task) -> Text:
        """The estimate, labelled, or nothing."""
        if task.total is None or task.finished:
            return Text("")
        return Text.assemble("ETA ", super().render(task))


class RichInstallProgress:
    """An install progress sink: each step becomes a line; the previous one is marked done."""

    def __init__(self, console: Console):
        self.progress = Progress(
            SpinnerColumn(finished_text="[green]✓"), TextColumn("{task.description}", table_column=Column(ratio=1)),
            BarColumn(bar_width=20), AmountColumn(), TimeElapsedColumn(), RemainingColumn(), console=console,
            expand=True,
        )
        self.task: TaskID | None = None

    def __enter__(self) -> "RichInstallProgress":
        self.progress.start()
        return self

    def __exit__(self, exc_type, *exc) -> None:
        # a failed step stays unticked
        if exc_type is None:
            self._finish()
        self.progress.stop()

    def step(self, description: str, total: float | None = None, unit: str = "") -> None:
        """Close the current step and start the next one."""
        self._finish()
        self.task = self.progress.add_task(description, total=total, unit=unit)

    def advance(self, amount: float) -> None:
        """Progress within the current step."""
        if self.task is not None:
            self.progress.advance(self.task, amount)

    def _finish(self) -> None:
        if self.task is not None:
            task = self.progress.tasks[-1]
            # a step without a size has no bar to fill: give it one so it shows as done
            self.progress.update(self.task, total=task.total or 1, completed=task.total or 1)
            self.progress.stop_task(self.task)
