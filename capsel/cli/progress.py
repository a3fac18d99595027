"""A rich progress bar with count, rate and ETA for long CLI work."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TextColumn, TimeElapsedColumn, TimeRemainingColumn,
)
from rich.text import Text


class RateColumn(ProgressColumn):
    """Items per second (or seconds per item when slower than one a second)."""

    def __init__(self, unit: str) -> None:
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        """The current rate, or a dash before there is one."""
        if not task.speed:
            return Text(f"- {self.unit}/s")
        if task.speed < 1:
            return Text(f"{1 / task.speed:.2f} s/{self.unit}")
        return Text(f"{task.speed:.1f} {self.unit}/s")


def progress_bar(console: Console, unit: str, *extra: ProgressColumn) -> Progress:
    """Description, bar, done/total, rate, extra columns, elapsed and remaining time."""
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), RateColumn(unit),
                    *extra, TimeElapsedColumn(), TimeRemainingColumn(), console=console)
