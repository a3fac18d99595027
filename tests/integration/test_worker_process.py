"""A generator in a spawned worker process: same tokens as in this process, clean errors, and a real exit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from capsel.cap_engine.config import ScoringConfig
from capsel.cap_engine.generation import HFGenerator
from capsel.cap_engine.inputs import CandidateText, build_inputs
from capsel.cap_engine.worker_process import ProcessGenerator
from capsel.errors import CapselError
from capsel.models.loading import describe_model, load_model
from tests.fixtures.candidates import mixed_candidates
from tests.fixtures.pool import tiny_model_dir
from tests.support import process_factories


def test_generator_in_a_worker_process_matches_in_process(tmp_path):
    path = str(tiny_model_dir(tmp_path / "m"))
    info = describe_model(path, dtype="float32", device="cpu")
    inputs = build_inputs([CandidateText(**c) for c in mixed_candidates()], info.tokenizer, ScoringConfig())
    prompts = [item.prompt_ids for item in inputs if not item.excluded_reason]
    expected = HFGenerator(load_model(info), 48, batch_size=4).generate(prompts)

    worker = ProcessGenerator(process_factories.hf_generator, {"model_dir": path, "horizon": 48, "batch_size": 4},
                              name="hf", batch_size=4)
    try:
        assert worker.generate(prompts) == expected
        assert worker.generate(prompts[:2]) == expected[:2], "the worker serves batch after batch"
        assert worker.exitcode is None
    finally:
        worker.close()
    assert worker.exitcode == 0
    with pytest.raises(CapselError, match="closed"):
        worker.generate(prompts)


def test_a_generator_that_cannot_start_is_one_clear_error():
    with pytest.raises(CapselError, match="cannot start here"):
        ProcessGenerator(process_factories.refusing_generator, {}, name="refusing", batch_size=1)


def test_a_worker_that_dies_mid_batch_is_reported_with_its_exit_code():
    worker = ProcessGenerator(process_factories.dying_generator, {}, name="dying", batch_size=1)
    with pytest.raises(CapselError, match=r"died while generating \(exit code 3\)"):
        worker.generate([[1, 2, 3]])
    assert worker.exitcode == 3


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")


def test_closing_a_busy_worker_ends_it_and_what_it_started_at_once():
    worker = ProcessGenerator(process_factories.sleepy_generator, {}, name="sleepy", batch_size=1)
    [[grandchild]] = worker.generate([[0]])
    assert _alive(grandchild)
    stuck = threading.Thread(target=lambda: pytest.raises(CapselError, worker.generate, [[1]]), daemon=True)
    stuck.start()
    time.sleep(0.5)
    started = time.perf_counter()
    worker.close()
    assert time.perf_counter() - started < 15, "a batch in flight is not waited for"
    # Gone, not a clean exit. The exit code itself can be unreadable: a SIGCHLD handler that an
    # earlier test's event loop installed in this process may have reaped the child first.
    assert not _alive(worker.pid) and worker.exitcode != 0
    deadline = time.time() + 5
    while _alive(grandchild) and time.time() < deadline:
        time.sleep(0.1)
    assert not _alive(grandchild), "the worker's own children end with it"
    stuck.join(5)


# Holds a worker busy on a batch that never ends, after printing the worker's pid and its child's.
KILLED_PARENT = """
from capsel.cap_engine.worker_process import ProcessGenerator
from tests.support import process_factories
worker = ProcessGenerator(process_factories.sleepy_generator, {}, name="sleepy", batch_size=1)
[[grandchild]] = worker.generate([[0]])
print(worker.pid, grandchild, flush=True)
worker.generate([[1]])
"""


def test_a_busy_worker_and_what_it_started_end_when_its_parent_is_sigkilled():
    parent = subprocess.Popen([sys.executable, "-c", KILLED_PARENT], cwd=Path(__file__).parents[2],
                              stdout=subprocess.PIPE, text=True)
    pids: list[int] = []
    try:
        pids = [int(pid) for pid in parent.stdout.readline().split()]
        assert len(pids) == 2 and all(_alive(pid) for pid in pids)
        time.sleep(0.5)  # into the endless batch
        parent.kill()
        parent.wait()
        deadline = time.time() + 5
        while any(_alive(pid) for pid in pids) and time.time() < deadline:
            time.sleep(0.1)
        assert not any(_alive(pid) for pid in pids), "nobody can close them now: they must end by themselves"
    finally:
        parent.kill()
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
