"""How a method picks its members from its stored scores: the top residual z, a seeded draw, the top (or bottom,
or middle) score, or greedy k-center coverage. A method's declaration names one of these.

A selector is a declaration: its flags, its rule in words, and `pick`, the `module:function` that selects
(`pick(con, quotas, key, draw, selector)` -> the ranked members), imported when a selection runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

Order = Literal["high", "low", "middle"]
ORDER_RULES = {
    "high": "highest score first per domain; ties by candidate_id",
    "low": "lowest score first per domain; ties by candidate_id",
    "middle": "nearest the domain's median score rank first (the middle band); ties by candidate_id",
}
COVERAGE_RULE = "greedy k-center per domain from the point nearest the domain mean; ties by candidate_id"


@dataclass(frozen=True)
class Draw:
    """What one selection asks of its selector besides the quotas and the scores."""

    seed: int = 0
    order: Order | None = None
    ppl_guard: float | None = None
    ppl_guard_z: float | None = None


class Selector(Protocol):
    """Picks members per domain. `ranks_by_score` says the members' `score` column is the stored score they were
    ranked by (the gate checks it and excluded.parquet ranks the rest by it); `default_order` is not None for a
    selector that takes an order (high, low, middle); `has_cut` says the lowest member's z is the domain's cut;
    `seeded` says the seed decides the members."""

    @property
    def ranks_by_score(self) -> bool: ...

    @property
    def default_order(self) -> Order | None: ...

    @property
    def has_cut(self) -> bool: ...

    @property
    def seeded(self) -> bool: ...

    @property
    def pick(self) -> str: ...

    def rule(self, name: str, order: Order | None) -> str:
        """How the members are picked, in words (manifest and dataset card)."""
        ...


@dataclass(frozen=True)
class TopResidualZ:
    """The highest z of the per-domain residual of D_late on D_early (CAP)."""

    ranks_by_score: bool = False
    default_order: Order | None = None
    has_cut: bool = True
    seeded: bool = False
    pick: str = "capsel.selection.picks:top_residual_z"

    def rule(self, name: str, order: Order | None) -> str:
        return ("CAP = D_late - (alpha + beta * D_early), fit by OLS per domain; z standardises CAP within the "
                "domain; the highest z are taken, ties by candidate id")


@dataclass(frozen=True)
class SeededDraw:
    """A seeded random draw per domain over the eligible pool of the scores it reads, or over every candidate
    while nothing is scored."""

    ranks_by_score: bool = False
    default_order: Order | None = None
    has_cut: bool = False
    seeded: bool = True
    pick: str = "capsel.selection.picks:seeded_draw"

    def rule(self, name: str, order: Order | None) -> str:
        return "seeded random draw per domain: md5(seed:candidate_id) order"


@dataclass(frozen=True)
class TopScore:
    """Top-k by the method's stored score in `default_order` (a selection may ask for another order)."""

    default_order: Order = "high"
    ranks_by_score: bool = True
    has_cut: bool = False
    seeded: bool = False
    pick: str = "capsel.selection.picks:top_score"

    def rule(self, name: str, order: Order | None) -> str:
        return f"{name}: {ORDER_RULES[order or self.default_order]}"


@dataclass(frozen=True)
class Coverage:
    """Greedy k-center over each domain's stored embeddings, picked at select time."""

    ranks_by_score: bool = False
    default_order: Order | None = None
    has_cut: bool = False
    seeded: bool = False
    pick: str = "capsel.selection.picks:coverage"

    def rule(self, name: str, order: Order | None) -> str:
        return COVERAGE_RULE
