"""Module-level generator factories a spawned worker process can import by name (tests only)."""

from __future__ import annotations

import os
import subprocess
import time

from capsel.cap_engine.generation import HFGenerator
from capsel.errors import CapselError
from capsel.models.loading import describe_model, load_model


def hf_generator(model_dir: str, horizon: int, batch_size: int) -> HFGenerator:
    """A float32 CPU HF generator for the model folder."""
    return HFGenerator(load_model(describe_model(model_dir, dtype="float32", device="cpu")), horizon, batch_size)


def refusing_generator() -> HFGenerator:
    """Fails while starting, the way a backend that cannot run does."""
    raise CapselError("this backend cannot start here")


class DyingGenerator:
    """Starts fine, then its process dies abruptly on the first batch (as an OOM kill would)."""

    name = "dying"
    batch_size = 1

    def generate(self, prompt_ids_batch):
        os._exit(3)


def dying_generator() -> DyingGenerator:
    """A generator whose process exits without answering."""
    return DyingGenerator()


class SleepyGenerator:
    """Starts a grandchild process, answers once with its pid, then takes forever (a long vLLM batch)."""

    name = "sleepy"
    batch_size = 1

    def __init__(self):
        self.grandchild = subprocess.Popen(["sleep", "600"])
        self.calls = 0

    def generate(self, prompt_ids_batch):
        self.calls += 1
        if self.calls == 1:
            return [[self.grandchild.pid]]
        time.sleep(600)
        return [[]]


def sleepy_generator() -> SleepyGenerator:
    """A generator whose second batch never finishes."""
    return SleepyGenerator()
