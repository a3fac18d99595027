"""HumanEval's pass@1 by execution: each program runs in its own subprocess, temporary folder and timeout.

Standard library only: capsel copies this file into the harness task folder it writes, and lm-eval (in its own
environment, without capsel) imports it there as the task's filter and metric. lm-eval's stock humaneval metric
loads `code_eval` from the Hugging Face hub, which cannot be reached here.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

TIMEOUT_S = 10.0
# Generous for a HumanEval test, small enough that a runaway allocation or file cannot take the machine down.
MEMORY_LIMIT = 2 << 30
FILE_SIZE_LIMIT = 16 << 20


def build_program(prompt: str, completion: str, test: str, entry_point: str) -> str:
    """The program pass@1 runs: the prompt, the model's completion, the tests and the call that checks them."""
    return f"{prompt}{completion}\n\n{test}\n\ncheck({entry_point})\n"


# The child limits itself before it runs the program: a preexec_fn is unsafe in a threaded parent like lm-eval.
LAUNCHER = (
    "import resource, runpy, sys\n"
    f"resource.setrlimit(resource.RLIMIT_AS, ({MEMORY_LIMIT}, {MEMORY_LIMIT}))\n"
    f"resource.setrlimit(resource.RLIMIT_FSIZE, ({FILE_SIZE_LIMIT}, {FILE_SIZE_LIMIT}))\n"
    "runpy.run_path(sys.argv[1], run_name='__main__')\n"
)


def run_program(program: str, folder: Path, timeout_s: float = TIMEOUT_S, python: str = sys.executable) -> bool:
    """Whether `program` exits 0 within the timeout, run by `python -I` in a fresh temporary folder under `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="program-", dir=folder) as scratch:
        path = Path(scratch) / "program.py"
        path.write_text(program)
        # Isolated mode and a bare environment: the program sees neither this venv's settings nor any token.
        env = {"PATH": os.defpath, "HOME": scratch, "TMPDIR": scratch, "PYTHONHASHSEED": "0"}
        process = subprocess.Popen(
            [python, "-I", "-c", LAUNCHER, str(path)], cwd=scratch, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        try:
            return process.wait(timeout=timeout_s) == 0
        except subprocess.TimeoutExpired:
            return False
        finally:
            # Its own session: a program that forked leaves no child behind.
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()


def build_predictions(resps: list[list[str]], docs: list[dict]) -> list[list[str]]:
    """lm-eval filter: each completion prefixed with its problem's prompt (as lm-eval's own humaneval does)."""
    return [[doc["prompt"] + completion for completion in completions] for completions, doc in zip(resps, docs)]


def pass_at_1(references: list[str], predictions: list[list[str]], folder: str, timeout_s: float = TIMEOUT_S) -> float:
    """lm-eval metric for one problem: 1.0 when its first (greedy) program passes its tests, else 0.0."""
    program = f"{predictions[0][0]}\n\n{references[0]}\n"  # the target is test + check(entry_point)
    try:
        return float(run_program(program, Path(folder), timeout_s))
    except OSError as error:  # lm-eval retries a metric that raises TypeError with other arguments: fail plainly
        raise RuntimeError(f"could not run a HumanEval program under {folder}: {error}") from error
