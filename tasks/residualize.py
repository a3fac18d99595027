"""Task: per-domain OLS of D_late on D_early over the whole scored pool."""

from __future__ import annotations

import duckdb
from prefect import task
from prefect.cache_policies import NO_CACHE

from capsel.selection.residualize import DomainFit, fit_domains
from capsel.selection.scoring_key import ScoringKey


@task(name="residualize", cache_policy=NO_CACHE)
def residualize(con: duckdb.DuckDBPyConnection, key: ScoringKey, domains: list[str] | None) -> list[DomainFit]:
    """Fit every domain of `key`; a degenerate domain fails the task with the reason."""
    return fit_domains(con, key, domains)
