"""What the engine keeps per loaded model across batches (its KV pool, its captured steps), for one user at a time."""

from __future__ import annotations

import threading
import weakref
from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")


class PerModel(Generic[T]):
    """One T per model, made by `make()` on first use; it lives as long as the model."""

    def __init__(self, make: Callable[[], T]):
        self._make = make
        self._made: weakref.WeakKeyDictionary[Any, T] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def of(self, model: Any) -> T:
        with self._lock:
            made = self._made.get(model)
            if made is None:
                made = self._made[model] = self._make()
            return made


class Exclusive:
    """Held by one user at a time: `hold()` says whether the caller got it, `let_go()` gives it back."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held = False

    def hold(self) -> bool:
        with self._lock:
            if self._held:
                return False
            self._held = True
            return True

    def let_go(self) -> None:
        with self._lock:
            self._held = False
