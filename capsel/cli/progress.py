"""Rich progress bars with count, rate and ETA for long CLI work, and the scoring run summary."""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from capsel.cli.common import console
from capsel.safe_text import visible
from capsel.terminal_text import TextTable, markup, plain

if TYPE_CHECKING:  # the runner's tallies write the store's progress file: duckdb, which --help must not load
    from capsel.runner.progress import BatchReport, RunSummary

# Small models on a shared CPU: one torch thread is fast, more threads contending with other
# processes can be several times slower (measured here: 13 vs 1.6 candidates/s).
THREADS_HELP = "CPU threads for torch (1 is fastest for the small lab models on a shared machine)."


def task_rate(task: Task) -> float | None:
    """Items per second: rich's recent speed, else the rate since the task began (rich wants two updates within
    30 s, which a batch slower than that never gives: the rate then showed nothing for minutes)."""
    speed = task.finished_speed or task.speed
    if not speed and task.completed and task.elapsed:
        speed = task.completed / task.elapsed
    return speed or None


class RateColumn(ProgressColumn):
    """Items per second (or seconds per item when slower than one a second)."""

    def __init__(self, unit: str) -> None:
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        """The current rate, or a dash before there is one."""
        speed = task_rate(task)
        if not speed:
            return Text(f"- {self.unit}/s", style="progress.data.speed")
        if speed < 1:
            return Text(f"{1 / speed:.2f} s/{self.unit}", style="progress.data.speed")
        return Text(f"{speed:.1f} {self.unit}/s", style="progress.data.speed")


def progress_bar(console: Console, unit: str, *extra: ProgressColumn) -> Progress:
    """Description, bar, done/total, rate, extra columns, elapsed and remaining time.

    Descriptions are plain text (they name eval files and selections): no markup is read in them.
    """
    return Progress(TextColumn("{task.description}", style="bold", markup=False), BarColumn(), MofNCompleteColumn(),
                    RateColumn(unit), *extra, TimeElapsedColumn(), TextColumn("ETA"), RateRemainingColumn(),
                    console=console)


class RateRemainingColumn(TimeRemainingColumn):
    """Time left at `task_rate`, so it shows from the first update on, however long each update takes."""

    def render(self, task: Task) -> Text:
        """The time left, or a dash before there is a rate."""
        rate = task_rate(task)
        if task.finished or task.total is None or not rate:
            return super().render(task)
        seconds = int(max(task.total - task.completed, 0) / rate)
        minutes, seconds = divmod(seconds, 60)
        hours, minutes = divmod(minutes, 60)
        return Text(f"{hours}:{minutes:02d}:{seconds:02d}", style="progress.remaining")


class LiveBar:
    """One rich bar shown for the length of a `with` block; a subclass names the `unit` it counts."""

    unit = "item"

    def __init__(self, description: str) -> None:
        self.description = description
        self.progress = progress_bar(console, self.unit)
        self.task: TaskID | None = None

    def __enter__(self) -> Self:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()


class CandidateProgress(LiveBar):
    """A progress sink for the scoring runner: one bar over the pending candidates."""

    unit = "cand"

    def start(self, total: int) -> None:
        """Size the bar to the pending work."""
        self.task = self.progress.add_task(visible(self.description), total=total)

    def advance(self, report: BatchReport) -> None:
        """Move the bar by one committed batch."""
        if self.task is not None:
            self.progress.advance(self.task, report.n_candidates)


class EvalBars(LiveBar):
    """One bar per evaluation under way (rows for loss, samples for the harness), each named by what it
    evaluates."""

    unit = "row"

    def __init__(self) -> None:
        super().__init__("evaluations")  # each bar is named by its own evaluation instead
        self.tasks: dict[str, TaskID] = {}

    def update(self, what: str, done: int, total: int | None) -> None:
        """Move `what`'s bar, adding it at its first count."""
        if what not in self.tasks:
            self.tasks[what] = self.progress.add_task(visible(what), total=total)
        self.progress.update(self.tasks[what], completed=done, total=total)

    def notice(self, line: str) -> None:
        """A line printed above the bars."""
        self.progress.console.print(plain(line))


def summary_json(summary: RunSummary) -> dict:
    """A run summary as `--json` prints it: the stored counters, the run id, rate, threads and notes."""
    return {"run_id": summary.run_id, **summary.counters(), "notes": summary.notes}


def print_summary(title: str, summary: RunSummary, done_label: str, extra: dict[str, int] | None = None) -> None:
    """End-of-run counts: done, `extra` rows, excluded by reason, skipped as already done, wall time and rate.

    `extra` defaults to the y-hat generated on the way, except for a generate run.
    """
    table = TextTable(title=title, show_header=False, title_justify="left")
    table.add_row(done_label, str(summary.n_done))
    if extra is None:
        extra = {} if done_label == "generated" else {"y-hat generated on the way": summary.n_generated}
    for label, count in extra.items():
        table.add_row(label, str(count))
    for reason, count in sorted(summary.excluded.items()):
        table.add_row(f"excluded: {reason}", str(count))
    table.add_row("skipped (already done)", str(summary.n_already_done))
    table.add_row("processed this run", str(summary.n_processed))
    table.add_row("wall time", f"{summary.wall_s:.1f} s")
    table.add_row("rate", f"{summary.rate:.2f} candidates/s with {summary.torch_threads} torch threads")
    table.add_row("run id", summary.run_id)
    console.print(table)
    for note in summary.notes:
        console.print(markup("[yellow]warning:[/] {}", note))
