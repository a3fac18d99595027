"""Every baseline method capsel offers: how it selects, and which module scores it (imported on demand)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Literal

from capsel.errors import OptionError

Order = Literal["high", "low", "middle"]


@dataclass(frozen=True)
class Baseline:
    """Static facts of one method; cheap to import (no torch), so selection and --help can read them.

    `selects_by` is "score" (top-k by the stored score in `order`) or "coverage" (greedy k-center
    over stored embeddings at select time).
    """

    name: str
    summary: str
    module: str
    selects_by: Literal["score", "coverage"] = "score"
    order: Order = "high"


BASELINES: dict[str, Baseline] = {
    baseline.name: baseline
    for baseline in (
        Baseline("ppl", "perplexity of the reference response (Marion et al.)", "capsel.baselines.ppl"),
        Baseline("ifd", "instruction-following difficulty, highest first (Li et al.)", "capsel.baselines.ifd"),
        Baseline("qurating", "a QuRater-style classifier's educational_value logit", "capsel.baselines.qurating"),
        Baseline("kcenter", "greedy k-center over text embeddings (Sener & Savarese)", "capsel.baselines.kcenter",
                 selects_by="coverage"),
        Baseline("less", "cosine of LoRA gradient sketches with a target set's (Xia et al.)",
                 "capsel.baselines.less.scorer"),
    )
}


def baseline(name: str) -> Baseline:
    """The registry entry of `name`, or a CapselError listing the methods."""
    if name not in BASELINES:
        raise OptionError(f"unknown baseline method {name!r}; choose one of {', '.join(BASELINES)}")
    return BASELINES[name]


def scorer_module(name: str):
    """The module implementing `name` (it defines `from_options`, building the method's scorer)."""
    return importlib.import_module(baseline(name).module)
