"""The seccomp filter of HumanEval's sandbox, compiled with libseccomp (pyseccomp) into the BPF file bwrap loads.

Every system call is allowed but those that would reach outside the sandbox or into another process, which fail
with EPERM: mounting or unmounting anything (the old and the new mount API), new namespaces or joining others
(unshare, setns, clone with a namespace flag), ptrace and the calls that read or take another process's memory
or descriptors (pidfd_getfd, process_vm_readv/writev), the kernel keyring, bpf and perf_event_open. clone3 answers
ENOSYS, as container runtimes do: its flags sit in memory a filter cannot read, and the C library then falls back
to clone, whose flags it can. Calls from another ABI (32-bit calls on x86_64) kill the process (libseccomp's
default for a foreign architecture).
"""

from __future__ import annotations

import errno
from pathlib import Path

from capsel.errors import CapselError

DENIED = (
    "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick",
    "mount_setattr", "unshare", "setns", "ptrace", "pidfd_getfd", "process_vm_readv", "process_vm_writev", "keyctl",
    "add_key", "request_key", "bpf", "perf_event_open",
)
# CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME
NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x00000080)


def write_seccomp_filter(path: Path) -> Path:
    """Compile the filter into `path` (a BPF program); one error line where libseccomp is missing."""
    try:
        import pyseccomp as seccomp
    except (ImportError, OSError, RuntimeError) as error:
        raise CapselError(f"humaneval's sandbox needs libseccomp (pyseccomp over Debian's libseccomp2): {error}; "
                          "nothing was run") from error
    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    for name in DENIED:
        rules.add_rule(seccomp.ERRNO(errno.EPERM), name)
    for flag in NAMESPACE_FLAGS:
        rules.add_rule(seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        rules.export_bpf(handle)
    path.chmod(0o644)
    return path
