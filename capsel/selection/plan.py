"""Turn the selection's options into its members: resolve scores, fit domains, size quotas, select."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import duckdb
import pandas as pd

from capsel.errors import CapselError, OptionError
from capsel.methods.registry import method
from capsel.methods.selectors import Selector
from capsel.selection.budget import Budget, Quota, domain_quotas
from capsel.selection.params import SelectionParams
from capsel.selection.pool import DomainPool, domain_pools
from capsel.selection.residualize import DomainFit, fit_domains, fit_stats
from capsel.selection.scoring_key import ScoringKey, with_layer_split
from capsel.selection.select import select_members, selection_rule


@dataclass
class Selection:
    """A computed selection, not yet checked or published."""

    request: SelectionParams
    key: ScoringKey | None
    pools: list[DomainPool]
    fits: list[DomainFit]
    quotas: list[Quota]
    members: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    @property
    def selector(self) -> Selector:
        """How the request's method picks its members."""
        return method(self.request.method).selector

    @property
    def pool_description(self) -> str:
        """Which pool the members were drawn from, in words (recorded in the manifest)."""
        if self.key is None:
            return "all candidates (nothing is scored yet)"
        if not method(self.key.method).residualized:
            return (
                f"eligible {self.key.method}-scored candidates of scorer {self.key.model_fingerprint}, "
                f"config {self.key.config_hash} (the method's exclusions removed)"
            )
        return (
            f"eligible scored candidates of model {self.key.model_fingerprint}, "
            f"config {self.key.config_hash} (engine exclusions removed)"
        )

    @property
    def domain_stats(self) -> dict[str, dict[str, float | None]]:
        """domain -> what the gate checks of its fit: z's mean and sample std over the scored pool, alpha and
        beta, d_early's relative spread and the OLS identity shares (see DomainFit)."""
        return {fit.domain: fit_stats(fit) for fit in self.fits}

    @property
    def rule(self) -> str:
        """How the members were picked, in words."""
        rule = selection_rule(self.request.method, self.request.order)
        if self.key is not None and self.key.layers is not None and self.key.layers.recomputed:
            rule += f"; {self.key.layers.describe()}, re-averaged from the stored per-layer profile"
        if self.request.ppl_guard is not None:
            rule += (f"; candidates whose reference PPL lies above their domain's "
                     f"{self.request.ppl_guard:g}th percentile are not eligible (PPL guard)")
        if self.request.ppl_guard_z is not None:
            rule += (f"; candidates whose log reference PPL lies more than {self.request.ppl_guard_z:g} robust "
                     "standard deviations above their domain's median are not eligible (robust PPL guard)")
        return rule


def build_selection(
    con: duckdb.DuckDBPyConnection, request: SelectionParams, key: ScoringKey | None,
    fits: Sequence[DomainFit] | None = None,
) -> Selection:
    """Fit every domain of `key`'s scores, size the quotas and pick the members.

    `key` comes from `resolve_scoring_key`; None selects (randomly) from all candidates. A request naming
    `early`/`late` reads CAP's D_early/D_late over those blocks of the stored profile (`with_layer_split`).
    `fits`: the domains' fits of this key when a step before fitted them (a flow's residualize), not fitted again.
    """
    _check_guard(request, key)
    if request.early is not None or request.late is not None:
        if key is None:
            raise OptionError("[[early]] and [[late]] re-average CAP's stored layer profile: score the pool with "
                              "`capsel score` first")
        key = with_layer_split(con, key, request.early, request.late)
    pools = domain_pools(con, key, request.domains, request.ppl_guard, request.ppl_guard_z)
    notes = _guard_notes(request, pools)
    empty = [pool for pool in pools if pool.size == 0]
    if empty and request.domains:
        raise CapselError(
            f"no eligible scored candidates in domain(s) {[pool.domain for pool in empty]} for "
            f"{key.describe() if key else 'the store'}; score them first or leave them out of [[domains]]"
        )
    for pool in empty:
        notes.append(
            f"domain {pool.domain!r}: {pool.n_candidates} candidates, {pool.n_scored} scored, "
            f"{pool.n_excluded} excluded, none eligible: nothing selected from it"
        )
    pools = [pool for pool in pools if pool.size > 0]
    if not pools:
        raise CapselError("no domain has eligible candidates to select from")
    # the regression belongs to CAP's pool (random draws from it too); baselines have none
    if not (key and method(key.method).residualized):
        fits = []
    elif fits is not None:
        fitted = {pool.domain for pool in pools}
        fits = [fit for fit in fits if fit.domain in fitted]
    else:
        fits = fit_domains(con, key, [pool.domain for pool in pools])
    budget = request.parsed_budget
    quotas = domain_quotas(budget, {pool.domain: pool.size for pool in pools})
    notes += _budget_notes(budget, quotas)
    members = select_members(con, request, quotas, key)
    return Selection(request, key, pools, fits, quotas, members, notes)


def _check_guard(request: SelectionParams, key: ScoringKey | None) -> None:
    if request.ppl_guard is None and request.ppl_guard_z is None:
        return
    if key is None or not method(key.method).residualized:
        raise OptionError("the PPL guard ([[ppl_guard]], [[ppl_guard_z]]) applies to cap and random selections "
                          "from CAP's scored pool: it uses the PPL "
                          "that CAP scoring stored; score the pool with `capsel score` first")


def _guard_notes(request: SelectionParams, pools: list[DomainPool]) -> list[str]:
    guards = ([f"PPL above its {request.ppl_guard:g}th percentile"] if request.ppl_guard is not None else []) + (
        [f"robust z of log PPL above {request.ppl_guard_z:g}"] if request.ppl_guard_z is not None else [])
    if not guards:
        return []
    return [
        f"domain {pool.domain!r}: the PPL guard holds back {pool.n_guarded} of "
        f"{pool.n_scored - pool.n_excluded} eligible candidates ({' or '.join(guards)})"
        for pool in pools
    ]


def _budget_notes(budget: Budget, quotas: list[Quota]) -> list[str]:
    notes = []
    if budget.count is not None and budget.count <= 100:  # a number that reads as a share just as well
        where = "in total" if budget.mode == "total" else "per domain"
        notes.append(f"budget {budget.text} is {budget.count} rows {where} (for a share, write {budget.count}%)")
    if budget.mode == "total" and any(quota.capped for quota in quotas):
        pool = sum(quota.pool for quota in quotas)
        notes.append(f"budget {budget.text} exceeds the eligible pool of {pool}: taking all of it")
        return notes
    for quota in quotas:
        if quota.capped:
            notes.append(
                f"domain {quota.domain!r}: budget asks for {quota.requested} but only {quota.pool} are "
                f"eligible: taking all {quota.pool}"
            )
        elif quota.k == 0:
            notes.append(f"domain {quota.domain!r}: budget {budget.text} of {quota.pool} rounds to 0 members")
    return notes
