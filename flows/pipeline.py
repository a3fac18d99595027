"""The stages both flows share: ingest, score (sharded), residualize, select, gate and publish.

Composition only: every step is a capsel library call (through a task where it is one step
of the DAG). The flow process is DuckDB's single writer; workers only compute.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterator

from prefect.logging import get_run_logger
from prefect.runtime import flow_run
from prefect.states import Failed, State

from capsel.config import Settings, load_settings
from capsel.db import open_db
from capsel.db.progress_file import name_job, report_stage
from capsel.errors import CapselError
from capsel.faults import fault_point
from capsel.flows.artifacts import artifact_keys, publish_gate_failure, publish_run_artifacts, start_progress
from capsel.flows.job_name import flow_job
from capsel.flows.score_flow import score_flow_for
from capsel.lineage.openlineage_events import FlowDatasets, ParentJob, event_emitter, run_event
from capsel.methods.registry import method
from capsel.methods.spec import ModelSpec
from capsel.models.loading import describe_model
from capsel.models.source import ModelSource
from capsel.orchestration.artifact_keys import ArtifactKeys
from capsel.orchestration.flow_runs import incoming_files, ingested_files
from capsel.orchestration.run_report import FlowReport, ingest_line, selection_rows
from capsel.orchestration.summary_plots import summary_plots
from capsel.orchestration.version_diff import version_diff
from capsel.paths import inside_destination
from capsel.pipeline_config import PipelineConfig, ScoreFlowConfig
from capsel.profile.verdict_cache import keep_verdict, kept_verdict, profile_key
from capsel.publish.publish import GateFailedError
from capsel.runs import new_run_id, recorded_run
from capsel.stages.context import RunContext
from capsel.stages.ingest import IngestRequest, ingest, kept_nothing, lost_files_error
from capsel.stages.residualize import ResidualizeRequest, residualize
from capsel.stages.select import SelectRequest, select_and_publish, selection_key
from capsel.store.results import ResultKey
from capsel.tasks.profile import check_rank_profile
from capsel.tasks.steps import step_task

# the steps of the pipeline below: the stages the CLI runs, each a task of the flow
INGEST = step_task(ingest, "ingest")
RESIDUALIZE = step_task(residualize, "residualize")
SELECT_AND_PUBLISH = step_task(select_and_publish, "select-and-publish")


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
    logger = get_run_logger()
    ctx = RunContext(con, settings, parent_run_id=report.run_id, prefect_flow_run_id=report.prefect_flow_run_id)
    model = getattr(config.scoring, "model", None)
    source = _loadable(model) if isinstance(model, ModelSpec) else None
    paths = config.sources.resolved_paths(settings)
    files = incoming_files(paths)
    if files:
        report.ingest = INGEST(IngestRequest(files, config.sources.ingest_options(settings)), ctx)
        datasets.source_files = ingested_files(con, report.ingest)
        logger.info(ingest_line(report.ingest, between="\n"))
        if kept_nothing(report.ingest) and (lost := lost_files_error(report.ingest)) is not None:
            # nothing downstream runs on a pool that lacks every row it was given; a file of bad rows beside good
            # ones (the demo's) is quarantined and counted, and the run goes on
            raise lost
    else:
        report.notes.append(f"no input files in {paths}" if paths else "no sources, and CAPSEL_INCOMING_DIR is unset")
    fault_point("flow.after_ingest")

    if config.check_profile and isinstance(model, ModelSpec) and source is not None:
        _warn_without_u_shape(con, model, source, report)

    score_config = ScoreFlowConfig(db_path=config.db_path, scoring=config.scoring, runner=config.runner)
    scored = score_flow_for(score_config)(score_config, parent_run_id=report.run_id,
                                          progress_artifact_id=start_progress(keys))
    report.scoring = scored.scoring
    report.notes.extend(scored.scoring.notes)
    datasets.method = scored.key.method
    fault_point("flow.after_score")
    request = _select_request(config, settings, scored.key)
    key = selection_key(ctx, request)
    report.key = key
    if key is not None:  # None only for a random draw over a pool with nothing scored
        datasets.model = {"fingerprint": key.model_fingerprint, "name_or_path": key.model_name,
                          "dtype": key.model.get("dtype")}
        datasets.scoring_config_hash, datasets.scoring_config = key.config_hash, key.scoring_config

    n_new = (report.ingest.totals().n_inserted if report.ingest else 0) + report.scoring.n_processed
    if not publish_unchanged and n_new == 0:
        report.notes.append("nothing new was ingested or scored: no new selection version")
        return
    if key is not None and method(key.method).residualized:
        residuals = RESIDUALIZE(ResidualizeRequest(key, config.selection.domains), ctx)
        report.fits, report.examples = residuals.fits, residuals.examples
    fault_point("flow.before_select")
    datasets.selected = True
    try:
        fits = tuple(report.fits) if report.fits else None
        selected = SELECT_AND_PUBLISH(replace(request, key=key, fits=fits), ctx)
    except GateFailedError as error:
        publish_gate_failure(report.run_id, error, keys, settings)
        raise
    report.published = selected.published
    report.notes.extend(f"reconcile: {line}" for line in selected.reconciled.lines())
    report.notes.extend(selected.selection.notes)
    report.members = selection_rows(selected.selection.members)
    report.plots = summary_plots(con, selected.selection)
    report.change = version_diff(con, report.published.selection_id)
    # OpenLineage names local folders here; a selection in object storage is not one of its datasets yet
    datasets.selection_dir = report.published.path
    datasets.selection_id = report.published.selection_id


def _select_request(config: PipelineConfig, settings: Settings, scored: ResultKey) -> SelectRequest:
    """The selection over what this run scored: LESS by the scores against its target, the rest by their key."""
    target = getattr(config.scoring, "target", None)
    config_hash = None if target else scored.config_hash
    return SelectRequest(config.selection.request(scored.model_fingerprint, config_hash),
                         inside_destination(config.publish_root(settings), config.selection.out),
                         Path(target) if target else None, getattr(config.scoring, "target_max", None))


def _loadable(model: ModelSpec) -> ModelSource:
    """The model's files once its config and tokenizer load: a bad model fails the run before ingest, in one line."""
    return describe_model(model.path, trust_remote_code=model.trust_remote_code, allow_pickle=model.allow_pickle).source


def _warn_without_u_shape(con, model: ModelSpec, source: ModelSource, report: FlowReport) -> None:
    # The paper ties CAP's signal to the hidden-state U-shape; without it the ranks deserve doubt,
    # but the user asked for a selection, so this warns and goes on. A model is surveyed once per
    # database: the survey reloads and runs the model, which cost most of a short run's time.
    key = profile_key(source, model.prompt_format)
    if (kept := kept_verdict(con, key)) is not None:
        verdict = kept.verdict
        report.notes.append(f"rank profile: the verdict of {kept.surveyed_at:%Y-%m-%d %H:%M} for these model files "
                            f"(U-shape {'present' if verdict.present else 'absent'})")
    else:
        report_stage("rank survey", report.run_id, unit="layers")
        try:
            verdict = check_rank_profile(model.path, model.trust_remote_code, model.prompt_format,
                                         model.allow_pickle)
        except CapselError as error:  # e.g. too few blocks to judge: say so, scoring can still run
            report.notes.append(f"rank profile not checked: {error}")
            return
        keep_verdict(con, key, model.path, model.prompt_format, verdict)
    if not verdict.present:
        message = (f"rank profile: the model's hidden states show no U-shape over depth ({verdict.reason}); "
                   "CAP's ranks rest on that pattern, so check them (capsel profile --model ...)")
        get_run_logger().warning(message)
        report.notes.append(message)


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
