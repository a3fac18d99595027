"""Run as root, before bubblewrap: put the sandbox in its cgroups, give it an empty session keyring, make the paths it
needs reachable to an unprivileged user, drop root, then become bwrap.

`python -I stage0.py '<json>'`. Standard library only, and nothing of capsel: it runs from wherever the sandbox
package was copied. The paths a dropped user could not reach (an interpreter under /root, a bwrap in a venv there,
the program's folder) are bind-mounted into a root-owned folder any user can pass through, in a mount namespace of
this process alone, so the host's own mounts and permissions stay as they were. On any failure it says why in one
line and exits 126: bwrap then never ran, and the runner refuses to score the program.
"""

import ctypes
import json
import os
import platform
import resource
import sys

CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 32, 4096, 16384, 1 << 18
KEYCTL_JOIN_SESSION_KEYRING = 1
SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}
FAILED = 126


def _checked(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def main(plan: dict) -> None:
    """Cgroups, keyring, binds, then the unprivileged user and its process limit, then exec bwrap."""
    libc = ctypes.CDLL(None, use_errno=True)
    for procs in plan["cgroups"]:
        with open(procs, "w") as handle:
            handle.write(str(os.getpid()))
    machine = platform.machine()
    if machine not in SYS_KEYCTL:
        raise OSError(f"no keyctl syscall number known for {machine}")
    if libc.syscall(SYS_KEYCTL[machine], KEYCTL_JOIN_SESSION_KEYRING, None) < 0:
        _checked(-1, "a new session keyring")
    if plan["binds"]:
        _checked(libc.unshare(CLONE_NEWNS), "a mount namespace of its own")
        _checked(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "private mounts")
        for source, target, read_only in plan["binds"]:
            _checked(libc.mount(source.encode(), target.encode(), None, MS_BIND | MS_REC, None), f"bind {source}")
            if read_only:
                _checked(libc.mount(None, target.encode(), None, MS_BIND | MS_REMOUNT | MS_RDONLY, None),
                         f"read-only {source}")
    os.setgroups([])
    os.setresgid(plan["gid"], plan["gid"], plan["gid"])
    os.setresuid(plan["uid"], plan["uid"], plan["uid"])
    resource.setrlimit(resource.RLIMIT_NPROC, (plan["nproc"], plan["nproc"]))
    os.execv(plan["argv"][0], plan["argv"])


if __name__ == "__main__":
    try:
        main(json.loads(sys.argv[1]))
    except (OSError, ValueError, KeyError) as error:
        print(f"the sandbox could not drop root: {error}", file=sys.stderr)
        sys.exit(FAILED)
