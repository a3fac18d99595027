"""Per thread: the heads a context manager has turned on now, counted so that nested contexts of one head nest."""

from __future__ import annotations

import contextlib
import threading
from typing import Callable, Iterator

import torch


class HeadsOnThread:
    """The heads the running thread holds on, each with how many contexts hold it (another thread sees its own)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def __contains__(self, head: torch.nn.Module) -> bool:
        return head in self._depths()

    @contextlib.contextmanager
    def on(self, head: torch.nn.Module, when_off: Callable[[], None] = lambda: None) -> Iterator[None]:
        """`head` on for this thread within the block; `when_off` runs when the outermost block of it ends."""
        depths = self._depths()
        depths[head] = depths.get(head, 0) + 1
        try:
            yield
        finally:
            depths[head] -= 1
            if not depths[head]:
                del depths[head]
                when_off()

    def _depths(self) -> dict[torch.nn.Module, int]:
        if not hasattr(self._local, "depths"):
            self._local.depths = {}
        return self._local.depths
