"""Selection budgets: parse 'N' or 'P%', then turn them into a k per domain."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal, Mapping

from capsel.errors import OptionError

BudgetMode = Literal["per_domain", "total"]
_COUNT = re.compile(r"^\d+$")
# Counts are stored (DuckDB BIGINT) and written to the manifest (JSON int64); a larger one can only mean "all".
MAX_COUNT = 2**63 - 1
_PERCENT = re.compile(r"^(\d+(?:\.\d+)?)%$")


@dataclass(frozen=True)
class Budget:
    """A budget as the user gave it: a count or a percentage, per domain or in total."""

    text: str
    mode: BudgetMode
    count: int | None = None
    percent: Fraction | None = None

    def of(self, pool_size: int) -> int:
        """Members this budget asks for out of a pool of `pool_size` (percentages round half up)."""
        if self.count is not None:
            return self.count
        assert self.percent is not None  # a budget is a count or a percentage
        return math.floor(Fraction(pool_size) * self.percent / 100 + Fraction(1, 2))


@dataclass(frozen=True)
class Quota:
    """How many members one domain gets: `requested` by the budget, `k` after capping at the pool."""

    domain: str
    pool: int
    requested: int
    k: int

    @property
    def capped(self) -> bool:
        """True when the budget asked for more than the eligible pool holds."""
        return self.requested > self.pool


def parse_budget(text: str, mode: BudgetMode = "per_domain") -> Budget:
    """Parse '800' or '10%' (0 < P <= 100); anything else is a CapselError saying what is accepted."""
    cleaned = text.strip()
    if mode not in ("per_domain", "total"):
        raise OptionError(f"budget mode must be per_domain or total, not {mode!r}")
    if _COUNT.match(cleaned):
        count = int(cleaned)
        if count < 1:
            raise OptionError("the budget must be at least 1 candidate")
        if count > MAX_COUNT:
            raise OptionError(f"the budget must be at most {MAX_COUNT:,} candidates; for every eligible "
                              "candidate give 100%")
        return Budget(text=cleaned, mode=mode, count=count)
    match = _PERCENT.match(cleaned)
    if match:
        percent = Fraction(match.group(1))
        if not 0 < percent <= 100:
            raise OptionError(f"a percentage budget must be in (0, 100], not {cleaned}")
        return Budget(text=cleaned, mode=mode, percent=percent)
    raise OptionError(f"cannot read budget {text!r}: give a count such as 800 or a percentage such as 10%")


def domain_quotas(budget: Budget, pool_sizes: Mapping[str, int]) -> list[Quota]:
    """k per domain: the budget in each domain, or a total split in proportion to pool sizes.

    A total is split by largest remainder; equal remainders go to domains in name order.
    """
    domains = sorted(pool_sizes)
    if budget.mode == "per_domain":
        return [_quota(domain, pool_sizes[domain], budget.of(pool_sizes[domain])) for domain in domains]
    pool_total = sum(pool_sizes.values())
    requested_total = budget.of(pool_total)
    if pool_total == 0:
        return [_quota(domain, 0, 0) for domain in domains]
    target = min(requested_total, pool_total)
    shares = {domain: Fraction(target * pool_sizes[domain], pool_total) for domain in domains}
    floors = {domain: math.floor(share) for domain, share in shares.items()}
    leftover = target - sum(floors.values())
    by_remainder = sorted(domains, key=lambda domain: (-(shares[domain] - floors[domain]), domain))
    for domain in by_remainder[:leftover]:
        floors[domain] += 1
    if requested_total > pool_total:
        # every domain is taken whole; say by how much each fell short of its share of the request
        return [
            _quota(domain, pool_sizes[domain], _share_of(requested_total, pool_sizes[domain], pool_total))
            for domain in domains
        ]
    return [_quota(domain, pool_sizes[domain], floors[domain]) for domain in domains]


def _share_of(total: int, size: int, pool_total: int) -> int:
    return math.ceil(Fraction(total * size, pool_total))


def _quota(domain: str, pool: int, requested: int) -> Quota:
    return Quota(domain=domain, pool=pool, requested=requested, k=min(requested, pool))
