"""One model load at a time in a process, without transformers' own progress bar."""

from __future__ import annotations

import threading


class _ModelLoad:
    """Held around every from_pretrained that builds a model.

    transformers' from_pretrained switches process-wide state (the default device, for meta-device
    init) while it builds a model. Two threads loading at once (sharded scoring on local threads) can
    leave it switched: every later load in the process then ends with weights on the meta device.
    Its "Loading weights" bar is turned off meanwhile: capsel reports its own progress, and the bar's
    carriage returns land as lines in flow run logs. Reentrant: nested loads restore what they found.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._bar_was_on: list[bool] = []

    def __enter__(self) -> None:
        from transformers.utils import logging

        self._lock.acquire()
        self._bar_was_on.append(logging.is_progress_bar_enabled())
        logging.disable_progress_bar()

    def __exit__(self, *exc: object) -> None:
        from transformers.utils import logging

        if self._bar_was_on.pop():
            logging.enable_progress_bar()
        self._lock.release()


MODEL_LOAD_LOCK = _ModelLoad()
