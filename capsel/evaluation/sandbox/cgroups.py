"""The sandbox's cgroups, as root: its processes, its memory (tmpfs included) and its CPU, capped as one.

RLIMIT_AS bounds each process, not their sum, and RLIMIT_NPROC is one per user; a cgroup holds the whole tree. The
stage that drops root joins them before it forks anything (stage0.py), so no process of the program runs outside.
cgroup v2 is one hierarchy whose controllers are enabled from the root; v1 mounts each controller apart.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from .limits import CPU_CORES, MEMORY_LIMIT, PROCESS_LIMIT

ROOT = Path("/sys/fs/cgroup")
_PERIOD_US = 100_000
# controller -> its v1 folder names, and the files that cap it (v1, v2)
_V1_FOLDERS = {"pids": ("pids",), "memory": ("memory",), "cpu": ("cpu", "cpu,cpuacct")}
_V1_LIMITS = {
    "pids": {"pids.max": str(PROCESS_LIMIT)},
    "memory": {"memory.limit_in_bytes": str(MEMORY_LIMIT), "memory.memsw.limit_in_bytes": str(MEMORY_LIMIT)},
    "cpu": {"cpu.cfs_period_us": str(_PERIOD_US), "cpu.cfs_quota_us": str(CPU_CORES * _PERIOD_US)},
}
_V2_LIMITS = {"pids": {"pids.max": str(PROCESS_LIMIT)},
              "memory": {"memory.max": str(MEMORY_LIMIT), "memory.swap.max": "0"},
              "cpu": {"cpu.max": f"{CPU_CORES * _PERIOD_US} {_PERIOD_US}"}}
# pids must be capped; memory and cpu are capped where the host has them, and the run says which it has
REQUIRED = "pids"


@dataclass(frozen=True)
class SandboxGroups:
    """One program's cgroups: the cgroup.procs file of each, by controller."""

    procs: dict[str, Path]

    def remove(self) -> None:
        """Remove each group once the sandbox's processes are gone (reaped with its first process)."""
        for procs in self.procs.values():
            for _ in range(100):
                try:
                    procs.parent.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)


def available() -> dict[str, Path]:
    """Where each controller can hold a new group as this user: {controller: the hierarchy's folder}."""
    if os.geteuid() != 0:
        return {}
    if (ROOT / "cgroup.controllers").is_file():  # v2
        enabled = (ROOT / "cgroup.controllers").read_text().split()
        return {name: ROOT for name in _V2_LIMITS if name in enabled and os.access(ROOT, os.W_OK)}
    found = {}
    for name, folders in _V1_FOLDERS.items():
        for folder in folders:
            path = ROOT / folder
            if (path / "cgroup.procs").is_file() and os.access(path, os.W_OK):
                found[name] = path
                break
    return found


def make_groups() -> SandboxGroups:
    """A group per available controller, each capped; OSError where one cannot be made."""
    hierarchies = available()
    name = f"capsel-sandbox-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    made: dict[str, Path] = {}
    try:
        for controller, hierarchy in hierarchies.items():
            group = hierarchy / name
            group.mkdir(exist_ok=True)
            if hierarchy == ROOT:  # v2: the root enables the controller for its children
                (ROOT / "cgroup.subtree_control").write_text(f"+{controller}")
                limits = _V2_LIMITS[controller]
            else:
                limits = _V1_LIMITS[controller]
            for file_name, value in limits.items():
                if (group / file_name).exists():  # memsw and swap.max exist only with swap accounting
                    (group / file_name).write_text(value)
            made[controller] = group / "cgroup.procs"
    except OSError:
        SandboxGroups(made).remove()
        raise
    return SandboxGroups(made)
