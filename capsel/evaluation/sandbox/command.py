"""bubblewrap's arguments: namespaces, no capabilities, a seccomp filter, and only the files a Python program needs.

Nothing of the host is bound but the system's programs and libraries (/usr and its links), the dynamic loader's
files of /etc, and the interpreter's own prefix, all read-only; /root, /home, /run, /var, /srv, /mnt, /media and
the host's /tmp do not exist inside, so no host socket is reachable by path (abstract sockets are the network
namespace's). The program's folder is its only writable place besides a sized /tmp: the root is remounted
read-only once everything is in place. With --as-pid-1 the program's
first process is the namespace's init: no bwrap process inside holds the status pipe, and when it exits the kernel
kills every process left in the namespace.
"""

from __future__ import annotations

import os
from pathlib import Path

from .limits import TMP_SIZE, WORK

# /etc files the dynamic loader and the interpreter read; nothing else of /etc (no shadow, no keys, no configs)
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime")
# top-level links and folders of the system's programs and libraries (merged /usr links them to /usr)
SYSTEM_TOPS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


def system_binds() -> list[str]:
    """/usr read-only, its top-level links as links (or folders bound read-only), the loader's /etc files."""
    args = ["--ro-bind", "/usr", "/usr"]
    for top in SYSTEM_TOPS:
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for name in ETC_FILES:
        args += ["--ro-bind-try", name, name]
    return args


def binds_prefix(prefix: Path) -> bool:
    """Whether the interpreter's prefix needs a bind of its own (not when /usr, bound already, holds it)."""
    return not (prefix == Path("/usr") or Path("/usr") in prefix.parents)


def sandbox_args(*, status_fd: int, seccomp_fd: int, prefix: Path, prefix_source: Path, scratch_source: Path,
                 interpreter: str, launcher: str, program_args: list[str]) -> list[str]:
    """Everything after bwrap's own path: `prefix_source` is bound read-only at `prefix` (the interpreter's, where it
    is under /usr already nothing more is bound) and `scratch_source` at the program's folder."""
    args = ["--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL", "--as-pid-1",
            "--die-with-parent", "--new-session", "--json-status-fd", str(status_fd), "--seccomp", str(seccomp_fd),
            *system_binds()]
    if binds_prefix(prefix):
        args += ["--ro-bind", str(prefix_source), str(prefix)]
    args += ["--size", str(TMP_SIZE), "--tmpfs", "/tmp", "--bind", str(scratch_source), WORK, "--chdir", WORK,
             "--proc", "/proc", "--dev", "/dev",
             # the root is bwrap's own tmpfs, which the sandbox's user owns: read-only, nothing unsized is written
             "--remount-ro", "/", "--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin",
             "--setenv", "HOME", WORK, "--setenv", "TMPDIR", "/tmp", "--setenv", "PYTHONHASHSEED", "0",
             "--", interpreter, "-I", "-c", launcher, *program_args]
    return args
