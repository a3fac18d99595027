"""Threads from the free cores, what a busy machine looks like, and a rate from a bar's very first update."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from rich.progress import Progress

from capsel import threads
from capsel.cli.progress import RateColumn, RateRemainingColumn, task_rate


@pytest.mark.parametrize(("busy", "cores", "requested", "expected"), [
    (0.0, 2, None, 2), (1.0, 2, None, 1), (3.5, 2, None, 1), (0.4, 4, None, 4), (1.6, 4, None, 2),
    (3.5, 2, 2, 2),  # asked for: the user's choice, capped at the cores only
    (0.0, 2, 8, 2),
])
def test_a_default_count_takes_the_free_cores_and_a_request_is_kept(monkeypatch, busy, cores, requested, expected):
    monkeypatch.setattr(threads, "available_cores", lambda: cores)
    monkeypatch.setattr(threads, "busy_elsewhere", lambda interval_s=0.25: busy)
    assert threads.torch_threads(requested) == expected


def test_a_process_spinning_on_a_core_is_seen_busy():
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        assert threads.busy_elsewhere(interval_s=0.5) >= 0.7
    finally:
        spinner.kill()
        spinner.wait()


def test_a_bar_whose_first_update_takes_minutes_shows_a_rate_and_a_time_left():
    now = [0.0]
    progress = Progress(get_time=lambda: now[0])
    task_id = progress.add_task("scoring", total=100)
    now[0] = 400.0  # one batch of 32 in 400 s: rich's own speed wants two updates within 30 s and has none
    progress.update(task_id, advance=32)
    task = progress.tasks[0]
    assert task.speed is None
    assert task_rate(task) == pytest.approx(32 / 400)
    assert RateColumn("cand").render(task).plain == "12.50 s/cand"
    assert RateRemainingColumn().render(task).plain == "0:14:10"  # 68 left at 0.08 a second
