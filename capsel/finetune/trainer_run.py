"""Run LlamaFactory's training in its own environment as a subprocess, offline, reporting progress as it goes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import yaml

from capsel.errors import CapselError
from capsel.processes import die_with_parent
from capsel.threads import torch_threads

LAUNCHER = Path(__file__).with_name("lf_train.py")
TRAINER_LOG = "trainer_log.jsonl"  # LlamaFactory's per-step log (extras/constants.py TRAINER_LOG)
POLL_S = 0.5
ProgressCallback = Callable[[int, int, float | None, float | None], None]
_VERSIONS = (
    "import importlib.metadata as m, json; "
    "print(json.dumps({p: m.version(p) for p in ('llamafactory', 'transformers', 'peft', 'torch')}))"
)
_DURATION = re.compile(r"(?:(\d+) days?, )?(\d+):(\d\d):(\d\d)$")


def no_progress(step: int, total: int, loss: float | None, eta_s: float | None) -> None:
    """The default progress callback: report nothing."""


def trainer_versions(python: Path) -> dict[str, str]:
    """llamafactory, transformers, peft and torch versions of the trainer's environment; one error line if absent."""
    fix = "run `make setup-llamafactory` in the capsel checkout, or set CAPSEL_TRAINER_PYTHON"
    try:
        probe = subprocess.run([str(python), "-c", _VERSIONS], capture_output=True, text=True, timeout=120,
                               env=_clean_env())
    except (OSError, subprocess.SubprocessError) as exc:
        raise CapselError(f"cannot run the trainer's Python {python} ({exc}): {fix}") from exc
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        raise CapselError(f"the trainer's Python {python} lacks LlamaFactory ({last}): {fix}")
    return json.loads(probe.stdout.strip().splitlines()[-1])


def trainer_env(cache_dir: Path, threads: int | None = None) -> dict[str, str]:
    """The training process's environment: offline, no version check, no telemetry, caches under `cache_dir`.

    Its torch threads are capped as capsel's own are (capsel/threads.py): on a busy machine two threads
    spin-waiting for each other made a SmolLM2 training step 3x slower than one thread.
    """
    env = _clean_env()
    if threads is not None or "OMP_NUM_THREADS" not in env:
        count = str(torch_threads(threads))
        env.update(OMP_NUM_THREADS=count, MKL_NUM_THREADS=count)
    env.update(
        HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1", DISABLE_VERSION_CHECK="1",
        HF_HUB_DISABLE_TELEMETRY="1", WANDB_DISABLED="true", TOKENIZERS_PARALLELISM="false",
        HF_HOME=str(cache_dir / "hf"), HF_DATASETS_CACHE=str(cache_dir / "datasets"),
        TRITON_CACHE_DIR=str(cache_dir / "triton"), MPLCONFIGDIR=str(cache_dir / "matplotlib"),
    )
    return env


def _clean_env() -> dict[str, str]:
    # capsel's own interpreter settings must not leak into the other environment's Python
    return {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


def write_config(args: dict, path: Path) -> None:
    """The LlamaFactory YAML of a run, keys in a stable order."""
    path.write_text(yaml.safe_dump(args, sort_keys=True))


@dataclass
class _LogReader:
    """Reads the lines LlamaFactory appends to trainer_log.jsonl; a half-written last line waits for the next read."""

    path: Path
    offset: int = 0
    pending: bytes = field(default=b"")

    def new_entries(self) -> list[dict]:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                chunk = handle.read()
        except FileNotFoundError:
            return []
        self.offset += len(chunk)
        lines = (self.pending + chunk).split(b"\n")
        self.pending = lines.pop()
        entries = []
        for line in lines:
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line LlamaFactory did not write as JSON: progress only, never fatal
        return entries


def logged_training(path: Path) -> dict:
    """What the trainer's own log says it did: its optimizer steps, the steps it logged and how many of them ran at a
    learning rate above zero, the largest rate, and the loss at the last step logged (every step with capsel's
    profiles, which log each one)."""
    steps = [entry for entry in _LogReader(path).new_entries() if "lr" in entry and "current_steps" in entry]
    losses = [entry["loss"] for entry in steps if entry.get("loss") is not None]
    return {
        "optimizer_steps": max((int(entry["total_steps"]) for entry in steps), default=0),
        "logged_steps": len(steps),
        "logged_learning_steps": sum(float(entry["lr"]) > 0 for entry in steps),
        "peak_learning_rate": max((float(entry["lr"]) for entry in steps), default=0.0),
        "final_loss": float(losses[-1]) if losses else None,
    }


def parse_duration(text: object) -> float | None:
    """Seconds of LlamaFactory's `str(timedelta)` remaining time ("0:01:23", "1 day, 2:00:00"); None if other."""
    match = _DURATION.match(str(text)) if text is not None else None
    if match is None:
        return None
    days, hours, minutes, seconds = (int(part or 0) for part in match.groups())
    return float(((days * 24 + hours) * 60 + minutes) * 60 + seconds)


def report(entry: dict, on_progress: ProgressCallback) -> None:
    """Hand one trainer_log.jsonl entry to the progress callback."""
    if "current_steps" not in entry or "total_steps" not in entry:
        return
    loss = entry.get("loss")
    on_progress(int(entry["current_steps"]), int(entry["total_steps"]), None if loss is None else float(loss),
                parse_duration(entry.get("remaining_time")))


def run_training(python: Path, config: Path, output_dir: Path, log_path: Path, cache_dir: Path,
                 on_progress: ProgressCallback = no_progress, threads: int | None = None) -> None:
    """Train with `config` in the trainer's environment; its output goes to `log_path`; a failure is one line."""
    # the trainer's working folder is the config's, where a relative path would no longer mean what it meant here
    config, output_dir, log_path, cache_dir = (path.absolute() for path in (config, output_dir, log_path, cache_dir))
    reader = _LogReader(output_dir / TRAINER_LOG)
    parent = os.getpid()
    with open(log_path, "ab") as log:
        try:
            process = subprocess.Popen(
                [str(python), str(LAUNCHER), str(config)], stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, cwd=config.parent, env=trainer_env(cache_dir, threads),
                preexec_fn=lambda: die_with_parent(parent),  # a killed capsel leaves no trainer behind
            )
        except OSError as exc:
            raise CapselError(f"cannot start the trainer's Python {python}: {exc}") from exc
        try:
            while process.poll() is None:
                for entry in reader.new_entries():
                    report(entry, on_progress)
                time.sleep(POLL_S)
        except BaseException:
            process.kill()  # Ctrl-C or a failing callback: the trainer must not outlive the call
            process.wait()
            raise
    for entry in reader.new_entries():
        report(entry, on_progress)
    if process.returncode != 0:
        raise CapselError(f"LlamaFactory training failed ({_ending(process.returncode, log_path)}); "
                          f"see {log_path}")


def _ending(returncode: int, log_path: Path) -> str:
    if returncode == -9:
        return "killed by SIGKILL, often the kernel's out-of-memory killer"
    if returncode < 0:
        return f"killed by signal {-returncode}"
    lines = [line.strip() for line in log_path.read_text(errors="replace").splitlines() if line.strip()]
    errors = [line for line in lines if re.match(r"^[A-Za-z_.]*(Error|Exception)\b", line)]
    last = (errors or lines or ["no output"])[-1]
    return f"exit {returncode}: {last[:300]}"
