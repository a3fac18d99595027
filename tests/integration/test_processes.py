"""A child that calls die_with_parent ends when its parent is SIGKILLed: by the kernel's signal, by the
watchdog thread where that signal is unavailable, and with its whole process group when asked."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from capsel.processes import die_with_parent, pid_alive

# The parent starts the child, passes on the line the child prints, then waits to be killed.
PARENT = textwrap.dedent("""
    import subprocess, sys
    child = subprocess.Popen([sys.executable, "-c", sys.argv[1]], stdout=subprocess.PIPE, text=True)
    print(child.stdout.readline().strip(), flush=True)
    child.wait()
""")
# `disarm` takes prctl away, so the child runs as on a system without it (the watchdog thread).
CHILD = textwrap.dedent("""
    import os, subprocess, time
    import capsel.processes as processes
    if {disarm}:
        processes._arm_parent_death_signal = lambda: False
    if {whole_group}:
        os.setpgrp()
    grandchild = subprocess.Popen(["sleep", "600"])
    processes.die_with_parent(os.getppid(), whole_group={whole_group})
    print(os.getpid(), grandchild.pid, flush=True)
    time.sleep(600)
""")


def _seconds_until_gone(pids: list[int], timeout_s: float = 10.0) -> float:
    started = time.monotonic()
    while any(pid_alive(pid) for pid in pids) and time.monotonic() - started < timeout_s:
        time.sleep(0.02)
    return time.monotonic() - started


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@pytest.mark.parametrize(("disarm", "whole_group"), [(False, False), (True, False), (False, True)],
                         ids=["prctl", "watchdog", "whole-group"])
def test_a_child_ends_soon_after_its_parent_is_sigkilled(disarm, whole_group):
    child_script = CHILD.format(disarm=disarm, whole_group=whole_group)
    parent = subprocess.Popen([sys.executable, "-c", PARENT, child_script], stdout=subprocess.PIPE, text=True)
    child = grandchild = 0
    try:
        child, grandchild = map(int, parent.stdout.readline().split())
        assert pid_alive(child) and pid_alive(grandchild)
        parent.kill()
        parent.wait()
        assert _seconds_until_gone([child]) < 3
        if whole_group:
            assert _seconds_until_gone([grandchild]) < 3
        else:
            assert pid_alive(grandchild)  # not the child's to end: this test ends it below
    finally:
        parent.kill()
        for pid in (child, grandchild):
            if pid:
                _kill(pid)


def test_a_child_whose_parent_died_before_it_watched_ends_at_once():
    # The parent pid it is given is not its parent's: as if the parent died and init adopted the child first.
    done = subprocess.run([sys.executable, "-c", "from capsel.processes import die_with_parent; "
                           "die_with_parent(1); print('still here')"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "still here" not in done.stdout


def test_whole_group_needs_a_group_leader():
    # pytest leads no process group of its own here: ending "our" group would end the test runner's.
    if os.getpgrp() == os.getpid():
        pytest.skip("this test process leads its own process group")
    with pytest.raises(ValueError, match="process group"):
        die_with_parent(os.getppid(), whole_group=True)


def test_pid_alive_knows_a_running_process_from_a_finished_one():
    finished = subprocess.Popen(["true"])
    finished.wait()
    assert pid_alive(os.getpid()) and not pid_alive(finished.pid)


def test_a_process_knows_its_start_to_the_tick():
    # psutil's create_time rests on a whole-second boot time; a reconcile compares it with folder times
    script = ("import time; now = time.time(); from capsel.processes import process_started_at; "
              "print(process_started_at(), now)")
    launched = time.time()
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    started, first_line_at = map(float, done.stdout.split())
    tick = 1 / os.sysconf("SC_CLK_TCK")
    assert started >= launched - tick - 0.01, "read up to a second early, as from a whole-second boot time"
    assert started <= first_line_at, "a start after the process's own first line"
