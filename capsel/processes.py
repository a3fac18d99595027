"""Which processes of this host are alive, and child processes that die with the process that started them."""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import sys
import threading
import time
from typing import Callable

import psutil

PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
WATCH_INTERVAL_S = 0.5


def this_host() -> str:
    """The name this machine goes by: a pid means something only together with it."""
    return socket.gethostname()


def process_started_at() -> float:
    """Wall-clock time this process started, to a clock tick (10 ms).

    psutil's create_time adds the boot time, which Linux reports in whole seconds: it can place a
    process's start up to a second early. Here only ages are compared (ticks since boot against the
    boot-time clock), so the start is as exact as the kernel records it.
    """
    fields = open("/proc/self/stat").read().rsplit(")", 1)[1].split()
    started_ticks = int(fields[19])  # field 22 of proc(5), counted from field 3 (after the command name)
    age = time.clock_gettime(time.CLOCK_BOOTTIME) - started_ticks / os.sysconf("SC_CLK_TCK")
    return time.time() - age


def pid_alive(pid: int) -> bool:
    """Whether process `pid` of this host is running (a zombie, dead but not yet reaped, is not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True  # another user's process: it exists


def die_with_parent(parent_pid: int, whole_group: bool = False) -> None:
    """End this process as soon as `parent_pid`, the process that started it, ends, even by SIGKILL.

    Call it first thing in a child process. On Linux the kernel sends SIGKILL (prctl PR_SET_PDEATHSIG);
    elsewhere a daemon thread polls the parent pid. The Linux signal follows the parent *thread* that
    started the child, so start such children from a thread that lives as long as the parent (the main one).

    `whole_group` is for a child that leads its own process group: every member ends with it, processes
    a library started included, which may not watch for our death themselves. Only the polling thread
    can do that (a SIGKILLed process does nothing more), so it is used then on Linux too.
    """
    if whole_group and os.getpgrp() != os.getpid():
        raise ValueError("whole_group needs a process that leads its own process group (os.setpgrp() first)")
    end = _end_group if whole_group else _end_process
    if whole_group or not _arm_parent_death_signal():
        threading.Thread(target=_watch_parent, args=(parent_pid, end), name="capsel-parent-watch", daemon=True).start()
    # The parent may have died before we started watching: then the child was already handed to a new
    # parent (init or a subreaper), and no signal will ever come.
    if os.getppid() != parent_pid:
        end()


def _arm_parent_death_signal() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return False
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0


def _watch_parent(parent_pid: int, end: Callable[[], None]) -> None:
    # An orphan is handed to another parent, so its parent pid changes the moment its parent dies.
    while os.getppid() == parent_pid:
        time.sleep(WATCH_INTERVAL_S)
    end()


def _end_process() -> None:
    os._exit(1)  # no clean-up: the parent that would use it is gone


def _end_group() -> None:
    os.killpg(os.getpgrp(), signal.SIGKILL)
