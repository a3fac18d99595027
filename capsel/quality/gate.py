"""Run the great-expectations gate on a selection: its tables read from the DB, then validated; write its report
wherever the caller says."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping

import duckdb
import pandas as pd

from capsel.quality.expectations import (
    FIT_COLUMNS,
    TEXT_COLUMNS,
    GateSpec,
    domain_expectations,
    domain_table,
    image_expectations,
    image_row_expectations,
    member_expectations,
)
from capsel.quality.gate_report import VALIDATION_FILE, expectation_arguments, outcome_detail, write_gate_report
from capsel.selection.lineage import member_lineage
from capsel.selection.scoring_key import ScoringKey

LINEAGE_COLUMNS = ["has_candidate", "has_source", "is_quarantined", "has_score", "excluded_reason"]


@dataclass(frozen=True)
class GateResult:
    """Outcome of the gate: success, the failing expectations in words, and its report (HTML and JSON)."""

    success: bool
    n_expectations: int
    failures: list[str] = field(default_factory=list)
    report_index: Path | None = None
    validation: Path | None = None


@dataclass(frozen=True)
class GateTables:
    """The frames the gate validates, as read from the DB, and the spec they are checked against."""

    spec: GateSpec
    members: pd.DataFrame
    domains: pd.DataFrame
    published: bool
    images: pd.DataFrame | None = None
    image_rows: pd.DataFrame | None = None

    def with_checks(self) -> dict[str, tuple[pd.DataFrame, list, str]]:
        """Each table by name with its expectations and the column that names its rows (imports GX)."""
        tables = {
            "members": (self.members, member_expectations(self.spec), "candidate_id"),
            "domains": (self.domains, domain_expectations(self.spec, self.published), "domain"),
        }
        if self.images is not None:
            tables["images"] = (self.images.astype({"path": object}), image_expectations(), "path")
        if self.image_rows is not None:
            tables["image_rows"] = (self.image_rows, image_row_expectations(), "candidate_id")
        return tables


def gate_tables(
    con: duckdb.DuckDBPyConnection,
    members: pd.DataFrame,
    spec: GateSpec,
    key: ScoringKey | None,
    domain_stats: Mapping[str, Mapping[str, float | None]],
    images: pd.DataFrame | None = None,
    image_rows: pd.DataFrame | None = None,
    published_counts: Mapping[str, int] | None = None,
) -> GateTables:
    """The tables the gate validates against `spec`: `members` with its lineage re-read from the DB (not trusted
    from the frame), and one row per domain. The only step of the gate that reads `con`: `check_tables` then runs
    without it.

    `domain_stats` maps domain -> its fit's checked values (FIT_COLUMNS: z's mean and sample std over the
    scored pool, alpha, beta, d_early's relative spread, the OLS identity shares). `images`
    (capsel.publish.images.FILE_COLUMNS, one row per image file the members list) adds a table whose checks say
    each file is in the selection folder, whole; `image_rows` (one row per member: candidate_id, n_images,
    n_placeholders) one that says each member's text places all its images. `published_counts` (domain ->
    members, as the manifest and dataset card will state them) must equal the members counted per domain.
    """
    fresh = member_lineage(
        con, members["candidate_id"].dropna().astype(str).tolist(), key, columns=["candidate_id", *LINEAGE_COLUMNS]
    )
    checked = members.drop(columns=[c for c in LINEAGE_COLUMNS if c in members.columns]).merge(
        fresh, on="candidate_id", how="left"
    )
    for column in TEXT_COLUMNS:
        if column in checked.columns:
            # GX 1.24 does not know pandas 3's "str" dtype; on object columns it checks each value's type
            checked[column] = checked[column].astype(object)
    published = published_counts is not None
    domains = pd.DataFrame(
        domain_table(checked["domain"].tolist(), spec.quotas, domain_stats, published_counts),
        columns=["domain", "k", "n_members", *FIT_COLUMNS, *(["n_published"] if published else [])],
    )
    return GateTables(spec, checked, domains, published, images, image_rows)


def check_tables(tables: GateTables, report_dir: Path, run_name: str) -> GateResult:
    """Validate `tables` (from `gate_tables`) in one GX run named `run_name` (the selection id); write its report
    to `report_dir` (index.html, validation.json) whatever the outcome."""
    run_time, results = _validate(tables.with_checks(), run_name)
    failures = [
        _describe(table, outcome.to_json_dict())
        for table, result in results.items()
        for outcome in result.results
        if not outcome.success
    ]
    n_expectations = sum(len(result.results) for result in results.values())
    index = write_gate_report(report_dir, run_name, run_time.isoformat(), results)
    return GateResult(
        success=not failures,
        n_expectations=n_expectations,
        failures=failures,
        report_index=index,
        validation=report_dir / VALIDATION_FILE,
    )


def check_selection(
    con: duckdb.DuckDBPyConnection,
    members: pd.DataFrame,
    spec: GateSpec,
    key: ScoringKey | None,
    domain_stats: Mapping[str, Mapping[str, float | None]],
    report_dir: Path,
    run_name: str,
    images: pd.DataFrame | None = None,
    image_rows: pd.DataFrame | None = None,
    published_counts: Mapping[str, int] | None = None,
) -> GateResult:
    """The whole gate in one call: `gate_tables`, then `check_tables` (their arguments)."""
    return check_tables(gate_tables(con, members, spec, key, domain_stats, images, image_rows, published_counts),
                        report_dir, run_name)


def _validate(tables: dict[str, tuple[pd.DataFrame, list, str]], run_name: str) -> tuple[datetime, dict]:
    # imported here: great_expectations takes seconds to import, and only this step needs it
    import great_expectations as gx
    from great_expectations.core.run_identifier import RunIdentifier

    context = ephemeral_context()
    # one run for both tables, named after the selection (GX names an unnamed run `__none__`); the time
    # is given, or GX tries to parse one out of the name
    run_id = RunIdentifier(run_name=run_name, run_time=datetime.now(timezone.utc))
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
        run = checkpoint.run(batch_parameters={"dataframe": frame}, run_id=run_id)
        results[table] = next(iter(run.run_results.values()))
    return run_id.run_time, results


def ephemeral_context():
    """An in-memory GX context: no docs site, no analytics, no progress bars."""
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
    )
    return gx.get_context(mode="ephemeral", project_config=config)


def _describe(table: str, outcome: dict) -> str:
    config = outcome["expectation_config"]
    return f"{table}: {config['type']}({expectation_arguments(config['kwargs'])}): {outcome_detail(outcome)}"
