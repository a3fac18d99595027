"""A scorer from its spec: the one place that knows which module implements each method."""

from __future__ import annotations

from typing import Any, Callable

from capsel.baselines.ifd import ifd_scorer
from capsel.baselines.kcenter import kcenter_scorer
from capsel.baselines.less.scorer import less_scorer
from capsel.baselines.ppl import ppl_scorer
from capsel.baselines.qurating import qurating_scorer
from capsel.scorers.base import Scorer
from capsel.scorers.cap import cap_scorer
from capsel.scorers.specs import ScorerSpec

_FACTORIES: dict[str, Callable[[Any], Scorer]] = {
    "cap": cap_scorer, "ppl": ppl_scorer, "ifd": ifd_scorer,
    "qurating": qurating_scorer, "kcenter": kcenter_scorer, "less": less_scorer,
}


def build_scorer(spec: ScorerSpec) -> Scorer:
    """The spec's scorer: identity and config now, weights on first use."""
    return _FACTORIES[spec.method](spec)
