"""Each evaluated row's outcome, and the metrics they add up to (overall and per domain) with their intervals."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Sequence

from capsel.evaluation.bootstrap import RESAMPLES, SEED, ratio_interval, ratio_of_sums

OVERALL = "*"


@dataclass(frozen=True)
class RowOutcome:
    """One row of one metric: loss → (NLL sum, response tokens); accuracy → (correct 0/1, 1)."""

    metric: str
    row_index: int
    domain: str
    outcome: float
    weight: float


@dataclass(frozen=True)
class MetricSummary:
    """A metric over the rows of one domain (or all, '*'): value, rows, total weight and its 95% interval."""

    domain: str
    metric: str
    value: float
    n: int
    weight: float
    ci95: tuple[float, float] | None
    resamples: int
    seed: int


def summarise(rows: Sequence[RowOutcome], per_domain: bool, resamples: int = RESAMPLES,
              seed: int = SEED) -> list[MetricSummary]:
    """Each metric overall ('*') and, when `per_domain`, per domain: ratio of sums with a bootstrap interval.

    A file with a single domain gives its overall rows only: the domain's would repeat them.
    """
    groups: dict[tuple[str, str], list[RowOutcome]] = defaultdict(list)
    for row in sorted(rows, key=lambda row: (row.metric, row.row_index)):
        groups[(OVERALL, row.metric)].append(row)
        if per_domain:
            groups[(row.domain, row.metric)].append(row)
    domains = {domain for domain, _ in groups if domain != OVERALL}
    summaries = []
    for (domain, metric), members in sorted(groups.items(), key=lambda item: (item[0][0] != OVERALL, item[0])):
        if domain != OVERALL and len(domains) == 1:
            continue
        outcome, weight = [row.outcome for row in members], [row.weight for row in members]
        summaries.append(MetricSummary(domain, metric, ratio_of_sums(outcome, weight), len(members), sum(weight),
                                       ratio_interval(outcome, weight, resamples, seed), resamples, seed))
    return summaries
