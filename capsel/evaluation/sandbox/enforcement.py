"""What the sandbox enforces on this host, and what it cannot, in one line for the start of a HumanEval run."""

from __future__ import annotations

import os

from .cgroups import available
from .limits import CPU_CORES, FILE_SIZE_LIMIT, MEMORY_LIMIT, PROCESS_LIMIT, TIMEOUT_S, TMP_SIZE


def _size(n_bytes: int) -> str:
    return f"{n_bytes >> 30} GiB" if n_bytes >= 1 << 30 else f"{n_bytes >> 20} MiB"


def enforcement(timeout_s: float = TIMEOUT_S) -> str:
    """One line: who the programs run as, what isolates them, the limits enforced here and those not."""
    root = os.geteuid() == 0
    groups = available()
    who = ("root dropped to an unprivileged uid of its own per program" if root
           else "this user (capsel is not root), inside a user namespace")
    enforced = [f"{timeout_s:g} s wall", f"{PROCESS_LIMIT} processes ("
                + ("pids cgroup and " if "pids" in groups else "") + "RLIMIT_NPROC)",
                f"{_size(MEMORY_LIMIT)} a process", f"{_size(TMP_SIZE)} /tmp", f"{_size(FILE_SIZE_LIMIT)} a file"]
    missing = []
    if "memory" in groups:
        enforced.append(f"{_size(MEMORY_LIMIT)} in all, /tmp included (memory cgroup)")
    else:
        missing.append(f"a total memory cap (no memory cgroup {'here' if root else 'as an unprivileged user'}: "
                       f"up to {PROCESS_LIMIT} processes of {_size(MEMORY_LIMIT)} each)")
    if "cpu" in groups:
        enforced.append(f"{CPU_CORES} core (cpu cgroup)")
    else:
        missing.append(f"a cap on cores (no cpu cgroup: {int(timeout_s) + 1} s of CPU a process)")
    return (f"sandbox: {who}; no capabilities, a seccomp filter (no mount, ptrace, unshare, setns, keyctl, bpf, "
            "perf_event_open), no network, an empty session keyring, no host file but /usr, the loader's /etc files "
            f"and the interpreter; enforced: {', '.join(enforced)}; not enforced here: "
            f"{'; '.join(missing) if missing else 'nothing'}")
