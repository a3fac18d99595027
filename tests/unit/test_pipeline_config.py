"""Flow parameters: strict pydantic models, one spec per method, mapping onto the library's own options."""

import pytest
from pydantic import ValidationError

from capsel.cap_engine.config import ScoringConfig
from capsel.errors import CapselError
from capsel.methods.cap import CapSpec
from capsel.methods.kcenter import KCenterSpec
from capsel.methods.ppl import PplSpec
from capsel.methods.spec import ModelSpec
from capsel.pipeline_config import PipelineConfig
from capsel.runner.work import host_spec, workers_spec
from capsel.selection.params import SelectionParams

MODEL = {"path": "/models/m"}


def test_unknown_fields_are_refused_at_every_level():
    with pytest.raises(ValidationError):
        PipelineConfig.model_validate({"scoring": {"method": "cap", "model": MODEL}, "budget": "5"})
    with pytest.raises(ValidationError):
        PipelineConfig.model_validate({"scoring": {"method": "cap", "model": {**MODEL, "dtpye": "float32"}}})
    with pytest.raises(ValidationError):
        PipelineConfig.model_validate({"scoring": {"method": "ppl", "model": MODEL, "early": 0.2}})


def test_defaults_are_the_papers_and_round_trip_through_json():
    config = PipelineConfig.model_validate({"scoring": {"method": "cap", "model": MODEL}})
    assert config.scoring.scoring_config() == ScoringConfig()
    assert PipelineConfig.model_validate(config.record()) == config
    assert config.runner.kind == "local" and config.selection.method == "cap"


def test_the_spec_is_chosen_by_method():
    config = PipelineConfig.model_validate({"scoring": {"method": "ppl", "model": MODEL},
                                            "selection": {"method": "ppl", "order": "low"}})
    assert isinstance(config.scoring, PplSpec) and config.selection.order == "low"
    kcenter = PipelineConfig.model_validate({"scoring": {"method": "kcenter"}, "selection": {"method": "kcenter"}})
    assert isinstance(kcenter.scoring, KCenterSpec) and kcenter.scoring.batch_size == 256


@pytest.mark.parametrize(("scoring", "selection", "problem"), [
    ("ppl", "cap", "selects by cap scores"),
    ("cap", "ppl", "selects by ppl scores"),
    ("ppl", "random", "random draws from CAP"),
])
def test_a_selection_must_read_what_the_run_scores(scoring, selection, problem):
    with pytest.raises(ValidationError, match=problem):
        PipelineConfig.model_validate({"scoring": {"method": scoring, "model": MODEL},
                                       "selection": {"method": selection}})
    with pytest.raises(ValidationError, match="set scoring.target"):
        PipelineConfig.model_validate({"scoring": {"method": "less", "model": MODEL}, "selection": {"method": "less"}})


def test_scoring_and_selection_map_to_library_types():
    spec = CapSpec(model=ModelSpec(**MODEL), horizon=24, early=0.25, late=0.75)
    assert spec.scoring_config() == ScoringConfig(horizon=24, early=0.25, late=0.75)
    with pytest.raises(ValidationError, match="early fraction"):
        CapSpec(model=ModelSpec(**MODEL), early=0.7, late=0.6)
    request = SelectionParams(budget=" 10% ", total=True, domains=["math"], model="fp", config_hash="cfg")
    assert (request.parsed_budget.mode, request.parsed_budget.text, request.record()["domains"]) == ("total", "10%", ["math"])
    assert (request.record()["model"], request.record()["config_hash"]) == ("fp", "cfg")
    with pytest.raises(CapselError, match="budget"):
        SelectionParams(budget="lots")


@pytest.mark.parametrize(("device", "uses_gpus", "local_cuda", "expected"), [
    ("auto", False, False, ("cpu", "float32")),
    ("auto", True, False, ("cuda", "bfloat16")),   # GPU workers decide, not the flow's CPU host
    ("auto", False, True, ("cuda", "bfloat16")),
    ("cpu", True, True, ("cpu", "float32")),
])
def test_workers_spec_fixes_device_and_dtype_once_for_every_model(device, uses_gpus, local_cuda, expected):
    spec = workers_spec(CapSpec(model=ModelSpec(path="/m", device=device)), uses_gpus, local_cuda)
    assert (spec.model.device, spec.model.dtype) == expected
    encoder = workers_spec(KCenterSpec(), uses_gpus, local_cuda).encoder
    assert (encoder.device, encoder.dtype) == expected if device == "auto" else True
    assert workers_spec(CapSpec(model=ModelSpec(path="/m", dtype="float32")), True, False).model.dtype == "float32"
    # the writer's host keeps the workers' dtype (the fingerprint hashes it) on its own device
    assert host_spec(spec).model.dtype == expected[1]


@pytest.mark.parametrize(("flow_module", "profile_default"), [("select_flow", True), ("rescore_flow", False)])
def test_the_flows_take_each_part_as_a_described_parameter_with_defaults(flow_module, profile_default):
    import importlib

    flow = getattr(importlib.import_module(f"capsel.flows.{flow_module}"), flow_module)
    schema = flow.parameters.model_dump()
    parts = ["sources", "scoring", "selection", "runner", "db_path", "output_root", "check_profile"]
    assert list(schema["properties"]) == parts and not schema["required"]  # a Quick Run needs none of them
    assert all(schema["properties"][part]["description"] for part in parts)
    assert schema["properties"]["check_profile"]["default"] is profile_default
    assert schema["properties"]["selection"]["default"] == SelectionParams().model_dump(mode="json")


def test_without_scoring_the_flows_score_cap_with_the_configured_model(monkeypatch):
    monkeypatch.delenv("CAPSEL_MODEL", raising=False)
    with pytest.raises(CapselError, match="CAPSEL_MODEL is not set"):
        PipelineConfig.from_parameters(selection=SelectionParams(budget="5"))
    monkeypatch.setenv("CAPSEL_MODEL", "/models/m")
    config = PipelineConfig.from_parameters(selection=SelectionParams(budget="5"))
    assert config.scoring.method == "cap" and config.scoring.model.path == "/models/m"
    assert PipelineConfig.from_parameters(**config.parameters()) == config


def test_no_source_paths_mean_the_incoming_folder(monkeypatch, tmp_path):
    from capsel.config import load_settings
    from capsel.pipeline_config import SourceParams

    monkeypatch.delenv("CAPSEL_INCOMING_DIR", raising=False)
    assert SourceParams().resolved_paths(load_settings()) == []
    monkeypatch.setenv("CAPSEL_INCOMING_DIR", str(tmp_path))
    assert SourceParams().resolved_paths(load_settings()) == [str(tmp_path)]
    assert SourceParams(paths=["a.jsonl"]).resolved_paths(load_settings()) == ["a.jsonl"]


def test_flow_sources_carry_the_dedup_key_and_image_limits_to_ingest(monkeypatch):
    from capsel.config import load_settings
    from capsel.pipeline_config import SourceParams

    monkeypatch.setenv("CAPSEL_MAX_IMAGE_BYTES", "1234")
    settings = load_settings()
    assert SourceParams().ingest_options(settings).dedup_key == "text"  # the paper's key by default
    options = SourceParams(dedup_key="text+images").ingest_options(settings)
    assert (options.dedup_key, options.max_image_bytes, options.max_image_pixels) == ("text+images", 1234, 89_478_485)
    with pytest.raises(ValidationError):
        SourceParams(dedup_key="images")


def test_where_flow_images_may_come_from_is_the_deployments_settings_alone(monkeypatch):
    from capsel.config import load_settings
    from capsel.ingest.image_access import ImageAccess
    from capsel.pipeline_config import SourceParams

    monkeypatch.setenv("CAPSEL_IMAGE_ROOTS", "/data/images,s3://bucket/images/")
    monkeypatch.setenv("CAPSEL_IMAGE_URL_HOSTS", "images.example.com")
    monkeypatch.setenv("CAPSEL_MAX_IMAGES_PER_ROW", "7")
    options = SourceParams().ingest_options(load_settings())
    assert options.image_access == ImageAccess(("/data/images", "s3://bucket/images/"), ("images.example.com",))
    assert (options.max_images_per_row, options.max_row_image_bytes) == (7, 64 * 2**20)
    for widening in ({"image_roots": ["/"]}, {"image_url_hosts": ["169.254.169.254"]}):
        with pytest.raises(ValidationError):  # a run's parameters cannot widen it
            SourceParams(**widening)
