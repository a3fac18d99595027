"""Per-domain OLS of D_late on D_early (sql/residualize.sql), with guards for degenerate domains."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Sequence

import duckdb

from capsel.db.records import fetch_records
from capsel.errors import CapselError
from capsel.selection.scoring_key import ScoringKey

# Two points fit a line exactly, leaving every residual zero and z undefined; three is the least
# that can give CAP a spread.
MIN_DOMAIN_SIZE = 3
# Above this r² the residuals are rounding noise (CAP variance is var(d_late)·(1 - r²)).
EXACT_FIT_R2 = 1.0 - 1e-12


@dataclass(frozen=True)
class DomainFit:
    """The regression of one domain: CAP = d_late - (alpha + beta * d_early), and its spread."""

    domain: str
    n_eligible: int
    n_invalid: int
    var_early: float | None
    alpha: float | None
    beta: float | None
    r2: float | None
    cap_std: float | None
    z_mean: float | None
    z_std: float | None

    def as_dict(self) -> dict:
        """Plain dict for the manifest."""
        return asdict(self)


def fit_domains(
    con: duckdb.DuckDBPyConnection, key: ScoringKey, domains: Sequence[str] | None = None
) -> list[DomainFit]:
    """Fit every domain with eligible scores for `key` (optionally only `domains`); refuse degenerate ones."""
    rows = fetch_records(con, "selection/residualize", {
        "model_fingerprint": key.model_fingerprint,
        "config_hash": key.config_hash,
        "domains": list(domains) if domains else None,
    })
    fits = [DomainFit(**row) for row in rows]
    for fit in fits:
        check_fit(fit, key)
    return fits


def check_fit(fit: DomainFit, key: ScoringKey) -> None:
    """Raise a CapselError naming the domain when its regression or z-score is undefined."""
    where = f"domain {fit.domain!r} (model {key.model_fingerprint}, config {key.config_hash})"
    remedy = "score more candidates of this domain, or leave it out by naming the other domains with --domain"
    if fit.n_invalid:
        raise CapselError(
            f"{where}: {fit.n_invalid} eligible candidates have a missing or non-finite d_early/d_late; "
            "rescore them (`capsel score`) before selecting"
        )
    if fit.n_eligible < MIN_DOMAIN_SIZE:
        raise CapselError(
            f"{where}: only {fit.n_eligible} eligible scored candidate(s); the per-domain regression "
            f"needs at least {MIN_DOMAIN_SIZE}: {remedy}"
        )
    if not _positive(fit.var_early):
        raise CapselError(
            f"{where}: d_early is the same for all {fit.n_eligible} candidates, so the slope of d_late "
            f"on d_early is undefined: {remedy}"
        )
    if not all(_finite(value) for value in (fit.alpha, fit.beta)):
        raise CapselError(f"{where}: the regression gave alpha={fit.alpha}, beta={fit.beta}: {remedy}")
    if not _positive(fit.cap_std) or (fit.r2 is not None and fit.r2 > EXACT_FIT_R2):
        raise CapselError(
            f"{where}: d_late is an exact linear function of d_early, so every CAP is equal and z is "
            f"undefined: {remedy}"
        )


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _positive(value: float | None) -> bool:
    return value is not None and math.isfinite(value) and value > 0
