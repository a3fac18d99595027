"""manifest.json: everything needed to audit and reproduce a published selection."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from capsel.quality.gate import GateResult
from capsel.selection.plan import Selection
from capsel.versioning import code_version, file_sha256


def build_manifest(
    selection: Selection,
    selection_id: str,
    created_at: datetime,
    members_sha256: str,
    run_id: str | None,
    gate: GateResult,
    data_files: Sequence[Path],
    funnel: list[dict],
    domains: list[dict],
    images: dict | None = None,
) -> dict:
    """The manifest of a selection about to be published (paths in it are relative to its directory).

    `domains` is `domain_entries(selection)`, as the gate checked it. `images` (count, bytes, folder of the copied
    image files) is recorded only for a selection that has some.
    """
    key = selection.key
    split = key.split_read() if key else None
    manifest = {
        "selection_id": selection_id,
        "created_at": created_at.isoformat(),
        "method": selection.request.method,
        "selection_rule": selection.rule,
        "budget": selection.request.parsed_budget.text,
        "budget_mode": selection.request.parsed_budget.mode,
        "seed": selection.request.seed,
        "license": selection.request.license,
        "pool": selection.pool_description,
        "request": selection.request.record(),
        "run_id": run_id,
        "code_version": code_version(),
        # for a baseline, "model" is its scorer (LM, encoder or rater) and "scoring_config" its method config
        "model": {"fingerprint": key.model_fingerprint if key else None, **(key.model if key else {})},
        "scoring_config": {
            "config_hash": key.config_hash if key else None,
            "config": key.scoring_config if key else None,
        },
        # CAP: the blocks D_early and D_late averaged (`select --early/--late`, else the split scoring stored)
        "layer_split": split.as_dict() if split else None,
        "n_members": int(len(selection.members)),
        "members_sha256": members_sha256,
        "domains": domains,
        "notes": list(selection.notes),
        # rows read -> duplicates -> quarantined -> ... -> selected; excluded.parquet holds every dropped row
        "funnel": funnel,
        "sources": source_entries(selection.members),
        "files": {path.name: file_sha256(path) for path in data_files},
        "gate": {"success": gate.success, "n_expectations": gate.n_expectations, "report": "gate/index.html",
                 "validation": "gate/validation.json"},
    }
    if images is not None:
        manifest["images"] = images
    return manifest


def domain_entries(selection: Selection) -> list[dict]:
    """Per domain: pool counts, the fitted alpha/beta/r², quota and the z of the last member taken."""
    fits = {fit.domain: fit for fit in selection.fits}
    quotas = {quota.domain: quota for quota in selection.quotas}
    # size, not count: count skips a null z, and every member of a random or baseline selection has one
    members = selection.members.groupby("domain")["z"].agg(["size", "min"])
    entries = []
    for pool in selection.pools:
        fit, quota = fits.get(pool.domain), quotas[pool.domain]
        taken = members.loc[pool.domain] if pool.domain in members.index else None
        entries.append({
            **pool.as_dict(),
            "requested": quota.requested,
            "k": quota.k,
            "capped": quota.capped,
            "n_members": int(taken["size"]) if taken is not None else 0,
            "z_cut": _float(taken["min"]) if taken is not None and selection.selector.has_cut else None,
            **({
                "alpha": fit.alpha, "beta": fit.beta, "r2": fit.r2, "cap_std": fit.cap_std,
                "z_mean": fit.z_mean, "z_std": fit.z_std,
            } if fit else {}),
        })
    return entries


def source_entries(members: pd.DataFrame) -> list[dict]:
    """Every source file members come from, with its sha256 and how many members it gave."""
    grouped = members.groupby(["source_id", "source_path", "source_sha256"], dropna=False).size()
    return [
        {"source_id": source_id, "path": path, "sha256": sha256, "n_members": int(count)}
        for (source_id, path, sha256), count in grouped.items()
    ]


def _float(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)
