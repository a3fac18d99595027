"""Where and in which dtype a model runs: `auto` resolved, and fixed once for every worker of a run."""

from __future__ import annotations

import torch

from capsel.errors import CapselError, OptionError

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def resolve_device(device: str) -> str:
    """'auto' is cuda when a GPU is visible, else cpu; asking for cuda without one is an error."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise CapselError("device cuda was asked for, but no CUDA device is visible")
    if device not in ("cpu", "cuda"):
        raise OptionError(f"unknown device {device!r}; use auto, cpu or cuda")
    return device


def resolve_dtype(dtype: str, device: str) -> str:
    """'auto' is bfloat16 on CUDA (as in the paper) and float32 on CPU."""
    if dtype == "auto":
        return "bfloat16" if device == "cuda" else "float32"
    if dtype not in DTYPES:
        raise OptionError(f"unknown dtype {dtype!r}; use auto, float32 or bfloat16")
    return dtype


def worker_device(device: str, dtype: str, uses_gpus: bool, local_cuda: bool) -> tuple[str, str]:
    """(device, dtype) fixed once by a flow, so every worker computes under one model fingerprint.

    `auto` is cuda when shards request GPUs (or this host has one).
    """
    if device == "auto":
        device = "cuda" if uses_gpus or local_cuda else "cpu"
    return device, resolve_dtype(dtype, device)


def host_device(device: str) -> str:
    """The device the flow's host describes a model on: the workers' own, or cpu where this host has no GPU."""
    return device if device != "cuda" or torch.cuda.is_available() else "cpu"
