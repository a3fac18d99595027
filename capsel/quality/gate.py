"""Run the great-expectations gate on a selection; build its HTML report wherever the caller says."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import duckdb
import orjson
import pandas as pd

from capsel.quality.expectations import (
    FIT_COLUMNS,
    TEXT_COLUMNS,
    GateSpec,
    domain_expectations,
    domain_table,
    member_expectations,
)
from capsel.selection.lineage import member_lineage
from capsel.selection.scoring_key import ScoringKey

LINEAGE_COLUMNS = ["has_candidate", "has_source", "is_quarantined", "has_score", "excluded_reason"]
_SITE = "capsel_gate"


@dataclass(frozen=True)
class GateResult:
    """Outcome of the gate: success, the failing expectations in words, and the HTML report."""

    success: bool
    n_expectations: int
    failures: list[str] = field(default_factory=list)
    report_index: Path | None = None


def check_selection(
    con: duckdb.DuckDBPyConnection,
    members: pd.DataFrame,
    spec: GateSpec,
    key: ScoringKey | None,
    domain_stats: Mapping[str, Mapping[str, float | None]],
    report_dir: Path,
) -> GateResult:
    """Validate `members` against `spec`; lineage is re-read from the DB, not trusted from the frame.

    `domain_stats` maps domain -> its fit's checked values (FIT_COLUMNS: z's mean and sample std over the
    scored pool, alpha, beta, d_early's relative spread, the OLS identity shares). The GX data docs of
    this validation are written to `report_dir` (index.html) whatever the outcome.
    """
    fresh = member_lineage(con, members["candidate_id"].dropna().astype(str).tolist(), key)[
        ["candidate_id", *LINEAGE_COLUMNS]
    ]
    checked = members.drop(columns=[c for c in LINEAGE_COLUMNS if c in members.columns]).merge(
        fresh, on="candidate_id", how="left"
    )
    for column in TEXT_COLUMNS:
        if column in checked.columns:
            # GX 1.24 does not know pandas 3's "str" dtype; on object columns it checks each value's type
            checked[column] = checked[column].astype(object)
    domains = pd.DataFrame(
        domain_table(checked["domain"].tolist(), spec.quotas, domain_stats),
        columns=["domain", "k", "n_members", *FIT_COLUMNS],
    )
    results = _validate(
        {
            "members": (checked, member_expectations(spec), "candidate_id"),
            "domains": (domains, domain_expectations(spec), "domain"),
        },
        report_dir,
    )
    failures = [
        _describe(table, outcome)
        for table, result in results.items()
        for outcome in result.results
        if not outcome.success
    ]
    n_expectations = sum(len(result.results) for result in results.values())
    index = report_dir / "index.html"
    return GateResult(
        success=not failures,
        n_expectations=n_expectations,
        failures=failures,
        report_index=index if index.exists() else None,
    )


def _validate(tables: dict[str, tuple[pd.DataFrame, list, str]], report_dir: Path) -> dict:
    # imported here: great_expectations takes seconds to import, and only this step needs it
    import great_expectations as gx

    context = _ephemeral_context(report_dir)
    source = context.data_sources.add_pandas("selection")
    results = {}
    for table, (frame, expectations, id_column) in tables.items():
        batch = source.add_dataframe_asset(table).add_batch_definition_whole_dataframe(table)
        suite = context.suites.add(gx.ExpectationSuite(name=f"capsel_{table}", expectations=expectations))
        definition = context.validation_definitions.add(
            gx.ValidationDefinition(name=f"capsel_{table}", data=batch, suite=suite)
        )
        # one checkpoint per table: a checkpoint binds the same dataframe to all its definitions
        checkpoint = context.checkpoints.add(gx.Checkpoint(
            name=f"capsel_{table}",
            validation_definitions=[definition],
            # name failing rows by their id, not only by the offending value
            result_format={"result_format": "SUMMARY", "unexpected_index_column_names": [id_column]},
        ))
        run = checkpoint.run(batch_parameters={"dataframe": frame})
        results[table] = next(iter(run.run_results.values()))
    # one build for both tables: rendering the site costs more than the validation itself
    context.build_data_docs(site_names=[_SITE])
    return results


def _ephemeral_context(report_dir: Path):
    import great_expectations as gx
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

    config = DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False),
        analytics_enabled=False,
        progress_bars=ProgressBarsConfig(globally=False),
        data_docs_sites={
            _SITE: {
                "class_name": "SiteBuilder",
                "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(report_dir)},
                "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
            }
        },
    )
    return gx.get_context(mode="ephemeral", project_config=config)


def _describe(table: str, outcome) -> str:
    config = outcome.expectation_config
    args = ", ".join(
        f"{name}={value!r}" for name, value in config.kwargs.items()
        if name not in ("batch_id",) and not (isinstance(value, list) and len(value) > 8)
    )
    result = outcome.result or {}
    if outcome.exception_info and outcome.exception_info.get("raised_exception"):
        detail = f"error: {outcome.exception_info.get('exception_message')}"
    elif "unexpected_count" in result:
        examples = result.get("partial_unexpected_index_list") or result.get("partial_unexpected_list") or []
        detail = f"{result['unexpected_count']} unexpected, e.g. {_json(examples[:5])}"
    else:
        detail = f"observed {_json(result.get('observed_value'))}"
    return f"{table}: {config.type}({args}): {detail}"


def _json(value: object) -> str:
    return orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY, default=str).decode()
