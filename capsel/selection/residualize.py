"""Per-domain OLS of D_late on D_early (sql/residualize.sql), with guards for degenerate domains."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Sequence

import duckdb

from capsel.db.records import fetch_records
from capsel.errors import CapselError
from capsel.selection.pinned_scores import pinned_cap_scores
from capsel.selection.scoring_key import ScoringKey

# Two points fit a line exactly, leaving every residual zero and z undefined; three is the least
# that can give CAP a spread.
MIN_DOMAIN_SIZE = 3
# Above this r² the residuals are rounding noise (CAP variance is var(d_late)·(1 - r²)).
EXACT_FIT_R2 = 1.0 - 1e-12
# std(d_early) / |mean(d_early)| below this leaves no slope worth fitting: one value off by 1e-13 in an
# otherwise constant domain gave beta ~ 1e12, a line through rounding noise. Real D_early spreads are
# 1e-2..1 relative, float64 rounding 1e-16, so the threshold is six orders clear of both.
MIN_EARLY_RELATIVE_SPREAD = 1e-6
# An exact OLS fit has |beta|·std(d_early) = |r|·std(d_late) <= std(d_late) and
# |alpha| <= |mean(d_late)| + |beta|·|mean(d_early)| (alpha = mean(d_late) - beta·mean(d_early)).
# Rounding moves these shares by far less than this; a fit that breaks them is not the OLS fit.
OLS_IDENTITY_TOLERANCE = 1e-3


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
    early_mean: float | None
    late_mean: float | None
    late_std: float | None
    z_mean: float | None
    z_std: float | None

    def as_dict(self) -> dict:
        """Plain dict for the manifest."""
        return asdict(self)

    @property
    def early_relative_spread(self) -> float:
        """std(d_early) / |mean(d_early)|: how far d_early varies for the slope to stand on (nan if unknown)."""
        if self.var_early is None or self.early_mean is None:
            return math.nan
        return _ratio(math.sqrt(max(self.var_early, 0.0)), abs(self.early_mean))

    @property
    def beta_share(self) -> float:
        """|beta|·std(d_early) / std(d_late), which is |r| <= 1 for the OLS slope (nan if unknown)."""
        if self.beta is None or self.var_early is None or self.late_std is None:
            return math.nan
        return _ratio(abs(self.beta) * math.sqrt(max(self.var_early, 0.0)), self.late_std)

    @property
    def alpha_share(self) -> float:
        """|alpha| / (|mean(d_late)| + |beta|·|mean(d_early)|), at most 1 for the OLS intercept (nan if unknown)."""
        if self.alpha is None or self.beta is None or self.early_mean is None or self.late_mean is None:
            return math.nan
        return _ratio(abs(self.alpha), abs(self.late_mean) + abs(self.beta) * abs(self.early_mean))


def fit_stats(fit: DomainFit) -> dict[str, float | None]:
    """The values of a fit the data-quality gate checks, by column name."""
    return {"z_mean": fit.z_mean, "z_std": fit.z_std, "alpha": fit.alpha, "beta": fit.beta,
            "early_relative_spread": fit.early_relative_spread, "beta_share": fit.beta_share,
            "alpha_share": fit.alpha_share}


def _ratio(part: float, whole: float) -> float:
    if whole:
        return part / whole
    return 0.0 if part == 0 else math.inf


def fit_domains(
    con: duckdb.DuckDBPyConnection, key: ScoringKey, domains: Sequence[str] | None = None
) -> list[DomainFit]:
    """Fit every domain with eligible scores for `key` (optionally only `domains`); refuse degenerate ones."""
    with pinned_cap_scores(con, key):
        rows = fetch_records(con, "selection/residualize", {
            "model_fingerprint": key.model_fingerprint,
            "config_hash": key.config_hash,
            "domains": list(domains) if domains else None,
            **key.layer_params(),
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
    if not fit.early_relative_spread >= MIN_EARLY_RELATIVE_SPREAD:
        raise CapselError(
            f"{where}: d_early barely varies (std/|mean| = {fit.early_relative_spread:.2g}, under "
            f"{MIN_EARLY_RELATIVE_SPREAD:g}), so the slope of d_late on d_early would be fitted to rounding noise "
            f"(alpha={fit.alpha}, beta={fit.beta}): {remedy}"
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
