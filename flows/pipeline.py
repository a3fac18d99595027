"""The selection pipeline as a Prefect flow: the declared steps (`capsel.stages.pipeline.SELECTION_STEPS`), each a
task, scoring a sharded subflow; what each step did goes to the run's artifacts, lineage and log.

The flow process is DuckDB's single writer; workers only compute.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from prefect.logging import get_run_logger
from prefect.runtime import flow_run
from prefect.states import Failed, State

from capsel.config import Settings, load_settings
from capsel.db import open_db
from capsel.db.progress_file import name_job, report_stage
from capsel.errors import CapselError
from capsel.flows.artifacts import artifact_keys, publish_gate_failure, publish_run_artifacts, start_progress
from capsel.flows.job_name import flow_job
from capsel.flows.score_flow import score_flow_for
from capsel.lineage.openlineage_events import FlowDatasets, ParentJob, event_emitter, run_event
from capsel.methods.spec import ModelSpec
from capsel.models.loading import describe_model
from capsel.models.source import ModelSource
from capsel.orchestration.artifact_keys import ArtifactKeys
from capsel.orchestration.flow_runs import incoming_files, ingested_files
from capsel.orchestration.run_report import FlowReport, ingest_line, selection_rows
from capsel.orchestration.summary_plots import summary_plots
from capsel.orchestration.version_diff import version_diff
from capsel.pipeline_config import PipelineConfig, ScoreFlowConfig
from capsel.profile.run_note import u_shape_notes
from capsel.profile.verdict import Verdict
from capsel.publish.publish import GateFailedError
from capsel.runs import new_run_id, recorded_run
from capsel.stages.context import RunContext
from capsel.stages.pipeline import SELECTION_STEPS, DeclaredStep, SelectionOutcome, SelectionPlan, run_steps
from capsel.stages.score import ScoreRequest, ScoreSummary
from capsel.tasks.profile import check_rank_profile
from capsel.tasks.steps import step_task

# each declared step as a task of the flow (scoring runs as a subflow instead)
STEP_TASKS = {declared.name: step_task(declared.step, declared.name) for declared in SELECTION_STEPS}


def run_pipeline(config: Callable[[], PipelineConfig], flow_key: str, publish_unchanged: bool) -> dict | State:
    """Run every stage, with the run's config (`config()`, typed from the flow's parameters), as one recorded 'flow'
    run; returns its counters.

    With `publish_unchanged` False (rescoring), a run that ingested and scored nothing new
    publishes no new version. A capsel error (a bad model, a refused gate) ends the run Failed with
    its message in one log line instead of the traceback Prefect logs for an exception; the error
    stays the state's result, so `capsel flow` exits with its code.
    """
    try:
        return _run(config(), flow_key, publish_unchanged)
    except CapselError as error:
        get_run_logger().error("%s", error)
        return Failed(message=f"{type(error).__name__}: {error}", data=error)


def _run(config: PipelineConfig, flow_key: str, publish_unchanged: bool) -> dict:
    config.check_parameters(load_settings())  # before anything is read or written
    name_job(flow_job())
    settings = config.settings()
    report = FlowReport(flow_key, run_id=new_run_id(), prefect_flow_run_id=_prefect_id())
    keys = artifact_keys(flow_key, settings)
    datasets = FlowDatasets(settings.db_path)
    counters: dict = {}
    con = open_db(settings.db_path)
    try:
        with _lineage(settings, report, datasets, config, flow_key), recorded_run(
            con, "flow", counters, config=config.record(), run_id=report.run_id,
            prefect_flow_run_id=report.prefect_flow_run_id,
        ):
            try:
                _stages(con, config, settings, report, datasets, publish_unchanged, keys)
            finally:
                counters.update(report.counters())
                datasets.counters = counters
    finally:
        con.close()
        publish_run_artifacts(report, keys, settings)
    return counters


def _stages(con, config: PipelineConfig, settings: Settings, report: FlowReport, datasets: FlowDatasets,
            publish_unchanged: bool, keys: ArtifactKeys) -> None:
    ctx = RunContext(con, settings, parent_run_id=report.run_id, prefect_flow_run_id=report.prefect_flow_run_id)
    model = getattr(config.scoring, "model", None)
    source = _loadable(model) if isinstance(model, ModelSpec) else None
    paths = config.sources.resolved_paths(settings)
    files = incoming_files(paths)
    if not files:
        report.notes.append(f"no input files in {paths}" if paths else "no sources, and CAPSEL_INCOMING_DIR is unset")
    plan = config.selection_plan(settings, files, publish_unchanged)

    def sharded_score(request: ScoreRequest, ctx: RunContext) -> ScoreSummary:
        if config.check_profile and isinstance(model, ModelSpec) and source is not None:
            def survey() -> Verdict:
                report_stage("rank survey", report.run_id, unit="layers")
                return check_rank_profile(model.path, model.trust_remote_code, model.prompt_format, model.allow_pickle)

            for note in u_shape_notes(con, source, model.path, model.prompt_format, survey):
                report.notes.append(note.text)
                if note.warn:
                    get_run_logger().warning(note.text)
        score_config = ScoreFlowConfig(db_path=config.db_path, scoring=config.scoring, runner=config.runner)
        return score_flow_for(score_config)(score_config, parent_run_id=report.run_id,
                                            progress_artifact_id=start_progress(keys))

    def call(declared: DeclaredStep, request: Any, ctx: RunContext) -> Any:
        # scoring is a subflow of its own, its shards dispatched to the runner's workers
        return sharded_score(request, ctx) if declared.name == "score" else STEP_TASKS[declared.name](request, ctx)

    def after(name: str, outcome: SelectionOutcome) -> None:
        _REPORTED[name](_Shown(con, plan, report, datasets), outcome)

    try:
        run_steps(SELECTION_STEPS, plan, SelectionOutcome(), ctx, call, after)
    except GateFailedError as error:
        publish_gate_failure(report.run_id, error, keys, settings)
        raise


@dataclass(frozen=True)
class _Shown:
    """Where a flow shows what its steps did: the run report (artifacts), the lineage datasets and the log."""

    con: Any
    plan: SelectionPlan
    report: FlowReport
    datasets: FlowDatasets


def _ingested(shown: _Shown, outcome: SelectionOutcome) -> None:
    if outcome.ingest is not None:
        shown.report.ingest = outcome.ingest
        shown.datasets.source_files = ingested_files(shown.con, outcome.ingest)
        get_run_logger().info(ingest_line(outcome.ingest, between="\n"))


def _scored(shown: _Shown, outcome: SelectionOutcome) -> None:
    report, datasets, key = shown.report, shown.datasets, outcome.key
    if outcome.score is None:
        return
    report.scoring = outcome.score.scoring
    report.notes.extend(outcome.score.scoring.notes)
    datasets.method = outcome.score.key.method
    report.key = key
    if key is not None:  # None only for a random draw over a pool with nothing scored
        datasets.model = {"fingerprint": key.model_fingerprint, "name_or_path": key.model_name,
                          "dtype": key.model.get("dtype")}
        datasets.scoring_config_hash, datasets.scoring_config = key.config_hash, key.scoring_config


def _residualized(shown: _Shown, outcome: SelectionOutcome) -> None:
    if outcome.residuals is not None:
        shown.report.fits, shown.report.examples = outcome.residuals.fits, outcome.residuals.examples


def _selected(shown: _Shown, outcome: SelectionOutcome) -> None:
    report, datasets, selected = shown.report, shown.datasets, outcome.selected
    report.notes.extend(outcome.notes)
    # the selection's inputs are named when it was attempted, refused by the gate too
    datasets.selected = outcome.select_request is not None and outcome.publishes(shown.plan)
    if selected is None:
        return
    report.published = selected.published
    report.notes.extend(f"reconcile: {line}" for line in selected.reconciled.lines())
    report.notes.extend(selected.selection.notes)
    report.members = selection_rows(selected.selection.members)
    report.plots = summary_plots(shown.con, selected.selection)
    report.change = version_diff(shown.con, report.published.selection_id)
    # OpenLineage names local folders here; a selection in object storage is not one of its datasets yet
    datasets.selection_dir = report.published.path
    datasets.selection_id = report.published.selection_id


# what the flow shows after each declared step
_REPORTED: dict[str, Callable[[_Shown, SelectionOutcome], None]] = {
    "ingest": _ingested, "score": _scored, "residualize": _residualized, "select-and-publish": _selected,
}


def _loadable(model: ModelSpec) -> ModelSource:
    """The model's files once its config and tokenizer load: a bad model fails the run before ingest, in one line."""
    return describe_model(model.path, trust_remote_code=model.trust_remote_code, allow_pickle=model.allow_pickle).source


@contextmanager
def _lineage(settings: Settings, report: FlowReport, datasets: FlowDatasets, config: PipelineConfig,
             flow_key: str) -> Iterator[None]:
    """OpenLineage START on entry, COMPLETE on success, FAIL with the error otherwise."""
    # the Prefect flow run is the parent job, under the flows' namespace by its Prefect flow name
    parent = None if report.prefect_flow_run_id is None else ParentJob(
        settings.openlineage_namespace, flow_run.flow_name, report.prefect_flow_run_id
    )
    emit = event_emitter(
        settings.openlineage_transport, settings.output_root, settings.openlineage_file, settings.openlineage_url
    )

    def send(state: str, error: str | None = None) -> None:
        if emit is None:
            return
        try:
            emit(run_event(state, report.run_id, f"capsel.{flow_key}", settings.openlineage_namespace, datasets,
                           parent, config.record(), error))
        except Exception as exc:  # noqa: BLE001 (lineage is an audit side channel: its outage must not fail the run)
            get_run_logger().warning("OpenLineage %s event not sent: %s", state, exc)

    send("START")
    try:
        yield
    except BaseException as exc:
        send("FAIL", f"{type(exc).__name__}: {exc}")
        raise
    send("COMPLETE")


def _prefect_id() -> str | None:
    return flow_run.id
