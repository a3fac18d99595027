"""A flow run's parameters name only what the deployment's environment allows (docs/SECURITY.md)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from capsel.config import load_settings
from capsel.pipeline_config import PipelineConfig
from capsel.run_parameters import RunParameterError, check_run, trust_typed


class _Run(BaseModel):
    """A run with no parameters of its own: the checks below name each place by keyword."""


def check_output_root(value, settings):
    check_run(_Run(), settings, output_root=value)


def check_db_path(value, settings):
    check_run(_Run(), settings, db_path=value)


def check_sources(paths, settings):
    check_run(_Run(), settings, sources=paths)


def check_model(value, settings, parameter, allow_pickle=False, trust_remote_code=False):
    check_run(_Run(), settings, models=[(parameter, value, allow_pickle, trust_remote_code)])


@pytest.fixture()
def roots(tmp_path):
    """A deployment: output root, incoming folder, models folder, one storage root; and a folder outside them."""
    for name in ("out", "incoming", "models", "elsewhere"):
        (tmp_path / name).mkdir()
    settings = load_settings(output_root=tmp_path / "out", incoming_dir=tmp_path / "incoming",
                             models_dir=tmp_path / "models", db_path=tmp_path / "deployment.duckdb",
                             storage_roots=["s3://pools/incoming"], model="org/deployment-model")
    return tmp_path, settings


def refused(check, *args, **kwargs) -> str:
    with pytest.raises(RunParameterError) as caught:
        check(*args, **kwargs)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_an_output_root_inside_the_deployment_root_is_taken_and_one_outside_is_refused_naming_both(roots):
    tmp_path, settings = roots
    check_output_root(str(tmp_path / "out" / "team-a"), settings)
    check_output_root(None, settings)
    message = refused(check_output_root, str(tmp_path / "elsewhere"), settings)
    assert "output_root" in message and str(tmp_path / "out") in message and "CAPSEL_OUTPUT_ROOT" in message
    refused(check_output_root, str(tmp_path / "out" / ".." / "elsewhere"), settings)
    refused(check_output_root, "/", settings)


def test_a_symlink_inside_the_root_that_points_out_of_it_is_outside(roots):
    tmp_path, settings = roots
    (tmp_path / "out" / "link").symlink_to(tmp_path / "elsewhere")
    refused(check_output_root, str(tmp_path / "out" / "link" / "x"), settings)


def test_storage_urls_need_a_storage_root_and_stay_under_it(roots):
    _, settings = roots
    check_output_root("s3://pools/incoming/v1", settings)
    check_sources(["s3://pools/incoming", "s3://pools/incoming/a.jsonl"], settings)
    for url in ("s3://pools/incoming-other/x", "s3://pools/incoming/../secret/x", "s3://other/x", "gs://pools/incoming"):
        assert "CAPSEL_STORAGE_ROOTS" in refused(check_sources, [url], settings)
    no_storage = settings.model_copy(update={"storage_roots": []})
    assert "none set" in refused(check_output_root, "s3://pools/incoming/v1", no_storage)


def test_the_database_is_the_deployments_own_or_lies_in_the_output_root(roots):
    tmp_path, settings = roots
    check_db_path(str(tmp_path / "deployment.duckdb"), settings)  # outside the root, but the operator's own
    check_db_path(str(tmp_path / "out" / "team.duckdb"), settings)
    message = refused(check_db_path, str(tmp_path / "elsewhere" / "x.duckdb"), settings)
    assert "db_path" in message and "CAPSEL_OUTPUT_ROOT" in message


def test_sources_lie_in_the_incoming_folder_or_a_source_root_and_need_one(roots):
    tmp_path, settings = roots
    check_sources([str(tmp_path / "incoming"), str(tmp_path / "incoming" / "a.jsonl")], settings)
    assert "sources.paths" in refused(check_sources, ["/etc/passwd"], settings)
    check_sources([str(tmp_path / "elsewhere" / "a.jsonl")],
                  settings.model_copy(update={"source_roots": [str(tmp_path / "elsewhere")]}))
    no_incoming = settings.model_copy(update={"incoming_dir": None})
    assert "sets no CAPSEL_INCOMING_DIR" in refused(check_sources, [str(tmp_path / "incoming")], no_incoming)


def test_models_are_installed_names_the_deployments_own_or_folders_under_the_model_roots(roots):
    tmp_path, settings = roots
    for allowed in ("org/deployment-model", "smollm2-135m-instruct", "demo", "packaged:all-MiniLM-L6-v2",
                    str(tmp_path / "models" / "m")):
        check_model(allowed, settings, "scoring.model.path")
    message = refused(check_model, "someone/else", settings, "scoring.model.path")  # a hub id would be downloaded
    assert "scoring.model.path" in message and "CAPSEL_MODEL_ROOTS" in message
    refused(check_model, str(tmp_path / "elsewhere"), settings, "scoring.model.path")
    check_model(str(tmp_path / "elsewhere"), settings.model_copy(update={"model_roots": [str(tmp_path / "elsewhere")]}),
                "scoring.model.path")


def test_checkpoint_code_runs_only_where_the_deployment_allows_it(roots):
    _, settings = roots
    for switch in ("trust_remote_code", "allow_pickle"):
        message = refused(check_model, "demo", settings, "scoring.model.path", **{switch: True})
        assert f"scoring.model.{switch}" in message and "CAPSEL_ALLOW_REMOTE_CODE=true" in message
        check_model("demo", settings.model_copy(update={"allow_remote_code": True}), "scoring.model.path",
                    **{switch: True})


def test_a_pipeline_config_checks_every_path_it_names_including_a_less_target(roots):
    tmp_path, settings = roots
    model = str(tmp_path / "models" / "m")
    inside = {"db_path": str(tmp_path / "out" / "x.duckdb"), "output_root": str(tmp_path / "out"),
              "sources": {"paths": [str(tmp_path / "incoming")]},
              "scoring": {"method": "less", "model": {"path": model}, "target": str(tmp_path / "incoming" / "t.jsonl")},
              "selection": {"method": "less"}}
    PipelineConfig.model_validate(inside).check_parameters(settings)
    outside = {**inside, "scoring": {**inside["scoring"], "target": "/etc/shadow"}}
    assert "scoring.target" in refused(PipelineConfig.model_validate(outside).check_parameters, settings)


def test_what_the_user_typed_at_this_command_line_is_theirs_to_name(roots, monkeypatch):
    import capsel.run_parameters as run_parameters

    tmp_path, settings = roots
    monkeypatch.setattr(run_parameters, "_TYPED", set())
    typed = str(tmp_path / "elsewhere" / "typed.duckdb")
    refused(check_db_path, typed, settings)
    trust_typed(typed, None)
    check_db_path(typed, settings)
    refused(check_db_path, str(tmp_path / "elsewhere" / "other.duckdb"), settings)
