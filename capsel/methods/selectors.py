"""How a method picks its members from its stored scores: the top residual z, a seeded draw, the top (or bottom,
or middle) score, or greedy k-center coverage. A method's declaration names one of these.

A selector is a declaration: its flags, its rule in words, and `pick`, the `module:function` that selects
(`pick(con, quotas, key, asked, selector)` -> the ranked members, `asked` the selection's `SelectionParams`),
imported when a selection runs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Literal

Order = Literal["high", "low", "middle"]
ORDER_RULES = {
    "high": "highest score first per domain; ties by candidate_id",
    "low": "lowest score first per domain; ties by candidate_id",
    "middle": "nearest the domain's median score rank first (the middle band); ties by candidate_id",
}
COVERAGE_RULE = "greedy k-center per domain from the point nearest the domain mean; ties by candidate_id"


@dataclass(frozen=True, kw_only=True)
class Selector(ABC):
    """Picks members per domain. `ranks_by_score` says the members' `score` column is the stored score they were
    ranked by (the gate checks it and excluded.parquet ranks the rest by it); `default_order` is not None for a
    selector that takes an order (high, low, middle); `has_cut` says the lowest member's z is the domain's cut;
    `seeded` says the seed decides the members. Each selector states only what differs from these defaults.
    """

    ranks_by_score: bool = False
    default_order: Order | None = None
    has_cut: bool = False
    seeded: bool = False
    pick: str

    @abstractmethod
    def rule(self, name: str, order: Order | None) -> str:
        """How the members are picked, in words (manifest and dataset card)."""


@dataclass(frozen=True, kw_only=True)
class TopResidualZ(Selector):
    """The highest z of the per-domain residual of D_late on D_early (CAP)."""

    has_cut: bool = True
    pick: str = "capsel.selection.picks:top_residual_z"

    def rule(self, name: str, order: Order | None) -> str:
        return ("CAP = D_late - (alpha + beta * D_early), fit by OLS per domain; z standardises CAP within the "
                "domain; the highest z are taken, ties by candidate id")


@dataclass(frozen=True, kw_only=True)
class SeededDraw(Selector):
    """A seeded random draw per domain over the eligible pool of the scores it reads, or over every candidate
    while nothing is scored."""

    seeded: bool = True
    pick: str = "capsel.selection.picks:seeded_draw"

    def rule(self, name: str, order: Order | None) -> str:
        return "seeded random draw per domain: md5(seed:candidate_id) order"


@dataclass(frozen=True, kw_only=True)
class TopScore(Selector):
    """Top-k by the method's stored score in `default_order` (a selection may ask for another order, and a
    declaration gives its own as the one positional argument: `TopScore("low")`)."""

    default_order: Order = field(default="high", kw_only=False)
    ranks_by_score: bool = True
    pick: str = "capsel.selection.picks:top_score"

    def rule(self, name: str, order: Order | None) -> str:
        return f"{name}: {ORDER_RULES[order or self.default_order]}"


@dataclass(frozen=True, kw_only=True)
class Coverage(Selector):
    """Greedy k-center over each domain's stored embeddings, picked at select time."""

    pick: str = "capsel.selection.picks:coverage"

    def rule(self, name: str, order: Order | None) -> str:
        return COVERAGE_RULE
