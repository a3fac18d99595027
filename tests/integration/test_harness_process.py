"""The harness's subprocess runner: its tqdm bars become progress reports as they are drawn, both streams are logged."""

import sys
import time

from capsel.evaluation.harness_process import run_logged

# Draws the bar as tqdm does (a carriage return before each redraw, none after), one step every 0.3 s.
BARS = """
import sys, time
print("table line", flush=True)
for done in range(4):
    sys.stderr.write(f"\\rRunning generate_until requests:  {done * 33}%|###| {done}/3 [00:0{done}<00:03, 1.0it/s]")
    sys.stderr.flush()
    time.sleep(0.3)
sys.stderr.write("\\nTraceback: the last line\\n")
sys.exit(3)
"""


def test_each_bar_is_reported_when_drawn_and_both_streams_are_logged(tmp_path):
    reports = []
    started = time.monotonic()
    finished = run_logged([sys.executable, "-c", BARS], cwd=tmp_path, env={}, log_path=tmp_path / "log",
                          on_progress=lambda done, total: reports.append((done, total, time.monotonic() - started)))
    assert [(done, total) for done, total, _ in reports] == [(0, None), (0, 3), (1, 3), (2, 3), (3, 3)]
    # (3, 3) is drawn 0.3 s before the process ends: it must not wait for the next redraw or the end
    assert reports[-1][2] < time.monotonic() - started - 0.15
    assert finished.returncode == 3 and finished.stdout == "table line\n"
    assert finished.last_error == "Traceback: the last line"
    log = (tmp_path / "log").read_text()
    assert "table line" in log and "1/3 [00:01" in log and "Traceback" in log


# Plays capsel: runs a long "harness" through run_logged and prints its pid once it started.
CAPSEL = """
import sys
from pathlib import Path
from capsel.evaluation.harness_process import run_logged

def started(done, total):
    print("started", flush=True)

run_logged([sys.executable, "-c", "import os, time; print(os.getpid(), flush=True); time.sleep(120)"],
           cwd=Path(sys.argv[1]), env={}, log_path=Path(sys.argv[1]) / "log", on_progress=started)
"""


def test_the_harness_dies_with_a_killed_capsel(tmp_path):
    import os
    import signal
    import subprocess

    from capsel.processes import pid_alive

    capsel = subprocess.Popen([sys.executable, "-c", CAPSEL, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert capsel.stdout is not None and capsel.stdout.readline().strip() == "started"
    deadline = time.monotonic() + 30
    while len((tmp_path / "log").read_text().splitlines()) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    harness = int((tmp_path / "log").read_text().splitlines()[1])  # the log's first line is the command
    assert pid_alive(harness)  # in a session of its own, so no group signal reaches it
    os.kill(capsel.pid, signal.SIGKILL)
    capsel.wait()
    deadline = time.monotonic() + 10
    while pid_alive(harness) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pid_alive(harness)
