"""How many CPU threads torch gets: chosen on purpose, never more in total than the cores this process may use.

torch's default takes every core for each process and each thread that runs a model. Two threads
contending with other work (a parse worker, a second shard, another user) spin-wait in OpenMP and
were measured 19x slower than one (0.9 against 17.5 candidates/s on a busy 2-core machine).
"""

from __future__ import annotations

import os


def available_cores() -> int:
    """CPU cores this process may run on (its affinity mask, which containers and taskset narrow)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # platforms without affinity masks
        return max(1, os.cpu_count() or 1)


def busy_elsewhere(interval_s: float = 0.25) -> float:
    """Cores other processes keep busy right now: the machine's CPU use over `interval_s` less this process's."""
    import psutil

    own = psutil.Process()
    own.cpu_percent()
    machine = psutil.cpu_percent(interval=interval_s) / 100 * (psutil.cpu_count() or 1)
    return max(0.0, machine - own.cpu_percent() / 100)


def free_cores(cores: int | None = None) -> int:
    """The cores left to this process: its cores less those other processes keep busy, at least one."""
    cores = cores or available_cores()
    return max(1, min(cores, round(cores - busy_elsewhere())))


def torch_threads(requested: int | None = None, concurrent: int = 1) -> int:
    """Threads for each of `concurrent` model runners: `requested` capped so the total fits the cores.

    Without a request the free cores (those other processes leave) are shared out evenly, at least one thread
    each: on a busy machine a thread per core spin-waits behind the other work.
    """
    cores = available_cores()
    share = max(1, cores // max(1, concurrent))
    if requested is None:
        return max(1, min(share, free_cores(cores) // max(1, concurrent)))
    if requested < 1:
        raise ValueError(f"threads must be at least 1, got {requested}")
    return min(requested, share)


def current_torch_threads() -> int:
    """torch's intra-op thread count now."""
    import torch

    return torch.get_num_threads()


def use_torch_threads(requested: int | None = None, concurrent: int = 1) -> int:
    """Set torch's intra-op thread count as `torch_threads` chooses it; returns the count."""
    import torch

    threads = torch_threads(requested, concurrent)
    torch.set_num_threads(threads)
    return threads
