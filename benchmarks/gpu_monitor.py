"""GPU utilisation and device memory sampled in a background thread (NVML, else `nvidia-smi`), per phase.

Device-wide figures, so they include work in child processes (the vLLM worker), which
`torch.cuda.max_memory_allocated` in this process cannot see.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

Sample = tuple[float, float, float]  # (time, utilisation %, memory used bytes)


def _nvml_reader(index: int) -> Callable[[], tuple[float, float]] | None:
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    except Exception:  # noqa: BLE001 - NVML present but unusable: fall back to nvidia-smi
        return None

    def read() -> tuple[float, float]:
        return (float(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu),
                float(pynvml.nvmlDeviceGetMemoryInfo(handle).used))

    return read


def _smi_reader(index: int) -> Callable[[], tuple[float, float]] | None:
    if shutil.which("nvidia-smi") is None:
        return None

    def read() -> tuple[float, float]:
        out = subprocess.run(
            ["nvidia-smi", f"--id={index}", "--query-gpu=utilization.gpu,memory.used",
             "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip().splitlines()[0]
        utilisation, used_mib = (float(part) for part in out.split(","))
        return utilisation, used_mib * 2**20

    return read


class GpuMonitor:
    """Samples one GPU every `interval_s` while running; `phase(name)` marks which samples belong where."""

    def __init__(self, index: int = 0, interval_s: float = 0.2):
        self.read, self.source = _nvml_reader(index), "nvml"
        if self.read is None:
            self.read, self.source = _smi_reader(index), "nvidia-smi"
        self.interval_s = interval_s
        self.samples: list[Sample] = []
        self.phases: dict[str, tuple[float, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "GpuMonitor":
        if self.read:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Samples taken inside this block count for `name`."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.phases[name] = (start, time.perf_counter())

    def summary(self) -> dict:
        """Mean utilisation and peak device memory, overall and per phase (None without a reader)."""
        if not self.read:
            return {"source": None, "reason": "neither pynvml nor nvidia-smi is available"}
        report = {"source": self.source, "n_samples": len(self.samples), **_stats(self.samples)}
        for name, (start, end) in self.phases.items():
            report[name] = _stats([s for s in self.samples if start <= s[0] <= end])
        return report

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                utilisation, used = self.read()
            except Exception:  # noqa: BLE001 - one failed sample must not end the benchmark
                utilisation, used = float("nan"), float("nan")
            self.samples.append((time.perf_counter(), utilisation, used))
            self._stop.wait(self.interval_s)


def _stats(samples: list[Sample]) -> dict:
    utilisation = [s[1] for s in samples if s[1] == s[1]]
    memory = [s[2] for s in samples if s[2] == s[2]]
    return {
        "utilisation_mean_pct": round(statistics.fmean(utilisation), 1) if utilisation else None,
        "device_memory_used_peak_bytes": int(max(memory)) if memory else None,
    }
