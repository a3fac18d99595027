"""The expectations a selection must meet before it is published, as great-expectations objects.

great_expectations is imported inside the functions: it takes seconds to import, and only the
gate needs it (not `capsel --help`, not the selection library).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from capsel.selection.residualize import MIN_EARLY_RELATIVE_SPREAD, OLS_IDENTITY_TOLERANCE

# checked value by value: the gate hands text columns to GX as object dtype (see gate.py)
TEXT_TYPES = ["str"]
INT_TYPES = ["int64", "int32", "Int64", "Int32"]
FLOAT_TYPES = ["float64", "Float64"]
# z over a domain has mean 0 and sample std 1 by construction; more than rounding error means a bug.
Z_TOLERANCE = 1e-6
# inf is not a finite z; ExpectColumnValuesToBeBetween counts it as unexpected against these bounds
FINITE_BOUND = 1e300

# Per-domain fit values the gate checks for CAP (capsel.selection.residualize.fit_stats).
FIT_COLUMNS = ("z_mean", "z_std", "alpha", "beta", "early_relative_spread", "beta_share", "alpha_share")

MEMBER_TYPES = {
    "candidate_id": TEXT_TYPES,
    "domain": TEXT_TYPES,
    "instruction": TEXT_TYPES,
    "input": TEXT_TYPES,
    "response": TEXT_TYPES,
    "source_id": TEXT_TYPES,
    "rank": INT_TYPES,
    "source_row": INT_TYPES,
}
SCORE_COLUMNS = ("d_early", "d_late", "cap", "z")
TEXT_COLUMNS = tuple(column for column, types in MEMBER_TYPES.items() if types is TEXT_TYPES)


@dataclass(frozen=True)
class GateSpec:
    """What the gate compares against: the quota per domain, whether the pool is scored, and by what.

    `score_columns` must be finite floats on every member and `z_standardised` says z has mean 0
    and std 1 per domain: both hold for CAP (and random over CAP's pool); a score baseline has
    only `score`, k-center none. Ids, text, counts, exclusions and lineage are checked for all.
    """

    quotas: dict[str, int]
    scored: bool
    score_columns: tuple[str, ...] = SCORE_COLUMNS
    z_standardised: bool = True


def gate_spec(quotas: dict[str, int], residualized: bool, scored: bool, has_score: bool) -> GateSpec:
    """The spec for a selection over `residualized` scores (CAP's z) or a baseline's; `has_score` says whether a
    baseline ranks by a stored score."""
    if not scored or residualized:
        return GateSpec(quotas=quotas, scored=scored)
    return GateSpec(quotas=quotas, scored=True, score_columns=("score",) if has_score else (), z_standardised=False)


def member_expectations(spec: GateSpec) -> list:
    """Checks on the member table: schema, ids, text, scores, budget and lineage."""
    import great_expectations.expectations as gxe

    checks = [
        gxe.ExpectTableColumnsToMatchSet(column_set=[*MEMBER_TYPES, *SCORE_COLUMNS], exact_match=False),
        *(
            gxe.ExpectColumnValuesToBeInTypeList(column=column, type_list=types)
            for column, types in MEMBER_TYPES.items()
        ),
        gxe.ExpectColumnValuesToBeUnique(column="candidate_id"),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["domain", "rank"]),
        gxe.ExpectColumnValuesToBeInSet(column="domain", value_set=sorted(spec.quotas)),
        gxe.ExpectTableRowCountToEqual(value=sum(spec.quotas.values())),
        *(gxe.ExpectColumnValuesToNotBeNull(column=column) for column in ("instruction", "input", "response")),
        *(
            gxe.ExpectColumnValuesToNotMatchRegex(column=column, regex=r"^\s*$")
            for column in ("instruction", "response")
        ),
        gxe.ExpectColumnValuesToBeInSet(column="has_candidate", value_set=[True]),
        gxe.ExpectColumnValuesToBeInSet(column="has_source", value_set=[True]),
        gxe.ExpectColumnValuesToBeInSet(column="is_quarantined", value_set=[False]),
    ]
    if spec.scored:
        checks += [
            gxe.ExpectColumnValuesToBeInSet(column="has_score", value_set=[True]),
            gxe.ExpectColumnValuesToBeNull(column="excluded_reason"),
            *(
                gxe.ExpectColumnValuesToBeInTypeList(column=column, type_list=FLOAT_TYPES)
                for column in spec.score_columns
            ),
            *(gxe.ExpectColumnValuesToNotBeNull(column=column) for column in spec.score_columns),
            *(
                gxe.ExpectColumnValuesToBeBetween(column=column, min_value=-FINITE_BOUND, max_value=FINITE_BOUND)
                for column in spec.score_columns
            ),
        ]
    return checks


def domain_expectations(spec: GateSpec, published: bool = False) -> list:
    """Checks per domain: member count equals the quota (and, when `published`, the count the manifest and dataset
    card state); z is standardised over the scored pool (CAP)."""
    import great_expectations.expectations as gxe

    checks = [
        gxe.ExpectColumnValuesToBeInSet(column="domain", value_set=sorted(spec.quotas)),
        gxe.ExpectColumnPairValuesToBeEqual(column_A="n_members", column_B="k"),
    ]
    if published:
        checks.append(gxe.ExpectColumnPairValuesToBeEqual(column_A="n_published", column_B="n_members"))
    if spec.scored and spec.z_standardised:
        checks += [
            *(gxe.ExpectColumnValuesToNotBeNull(column=column) for column in FIT_COLUMNS),
            gxe.ExpectColumnValuesToBeBetween(column="z_mean", min_value=-Z_TOLERANCE, max_value=Z_TOLERANCE),
            gxe.ExpectColumnValuesToBeBetween(column="z_std", min_value=1 - Z_TOLERANCE, max_value=1 + Z_TOLERANCE),
            # the fit itself: finite, on a d_early that varies, and the OLS line (its identities hold)
            *(
                gxe.ExpectColumnValuesToBeBetween(column=column, min_value=-FINITE_BOUND, max_value=FINITE_BOUND)
                for column in ("alpha", "beta")
            ),
            gxe.ExpectColumnValuesToBeBetween(column="early_relative_spread", min_value=MIN_EARLY_RELATIVE_SPREAD),
            *(
                gxe.ExpectColumnValuesToBeBetween(column=column, min_value=0, max_value=1 + OLS_IDENTITY_TOLERANCE)
                for column in ("beta_share", "alpha_share")
            ),
        ]
    return checks


def image_expectations() -> list:
    """Checks on the image files a selection lists: each one copied into its folder, with the stored size."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectColumnValuesToBeUnique(column="path"),
        gxe.ExpectColumnValuesToBeInSet(column="present", value_set=[True]),
        gxe.ExpectColumnPairValuesToBeEqual(column_A="n_bytes", column_B="n_bytes_on_disk"),
    ]


def image_row_expectations() -> list:
    """Checks per member of a selection with images: one `<image>` placeholder in its text per image it lists."""
    import great_expectations.expectations as gxe

    return [gxe.ExpectColumnPairValuesToBeEqual(column_A="n_images", column_B="n_placeholders")]


def domain_table(
    members_domains: Sequence[str], quotas: dict[str, int], domain_stats: Mapping[str, Mapping[str, float | None]],
    published_counts: Mapping[str, int] | None = None,
) -> list[dict]:
    """Rows of the per-domain table the domain checks run on: counts, the fit's stats (FIT_COLUMNS) and, when
    given, the member counts to be published (`n_published`)."""
    counts: dict[str, int] = {}
    for domain in members_domains:
        counts[domain] = counts.get(domain, 0) + 1
    domains = sorted(set(quotas) | set(counts) | set(published_counts or {}))
    return [
        {
            "domain": domain,
            "k": quotas.get(domain, 0),
            "n_members": counts.get(domain, 0),
            **{column: _null_if_nan(domain_stats.get(domain, {}).get(column)) for column in FIT_COLUMNS},
            **({"n_published": published_counts.get(domain, 0)} if published_counts is not None else {}),
        }
        for domain in domains
    ]


def _null_if_nan(value: float | None) -> float | None:
    # GX skips NaN as missing in value checks; as null, the not-null checks catch it
    return None if value is None or math.isnan(value) else value
