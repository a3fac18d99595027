"""Flow parameters: strict pydantic models mapping onto the library's own options."""

import pytest
from pydantic import ValidationError

from capsel.errors import CapselError
from capsel.orchestration.shard_worker import resolved_spec
from capsel.pipeline_config import ModelSpec, PipelineConfig, ScoringParams, SelectionParams
from capsel.scoring.config import ScoringConfig

MODEL = {"path": "/models/m"}


def test_unknown_fields_are_refused_at_every_level():
    with pytest.raises(ValidationError):
        PipelineConfig.model_validate({"scoring": {"model": MODEL}, "budget": "5"})
    with pytest.raises(ValidationError):
        PipelineConfig.model_validate({"scoring": {"model": {**MODEL, "dtpye": "float32"}}})


def test_defaults_are_the_papers_and_round_trip_through_json():
    config = PipelineConfig.model_validate({"scoring": {"model": MODEL}})
    assert config.scoring.scoring_config() == ScoringConfig()
    assert PipelineConfig.model_validate(config.record()) == config
    assert config.runner.kind == "local" and config.selection.method == "cap"


def test_scoring_and_selection_map_to_library_types():
    params = ScoringParams(model=ModelSpec(**MODEL), horizon=24, early=0.25, late=0.75)
    assert params.scoring_config() == ScoringConfig(horizon=24, early=0.25, late=0.75)
    with pytest.raises(ValidationError, match="early fraction"):
        ScoringParams(model=ModelSpec(**MODEL), early=0.7, late=0.6)
    request = SelectionParams(budget="10%", total=True, domains=["math"]).request("fp", "cfg")
    assert (request.budget.mode, request.budget.text, request.domains, request.model) == ("total", "10%", ("math",), "fp")
    with pytest.raises(CapselError, match="budget"):
        SelectionParams(budget="lots").request("fp", "cfg")


@pytest.mark.parametrize(("device", "uses_gpus", "local_cuda", "expected"), [
    ("auto", False, False, ("cpu", "float32")),
    ("auto", True, False, ("cuda", "bfloat16")),   # GPU workers decide, not the flow's CPU host
    ("auto", False, True, ("cuda", "bfloat16")),
    ("cpu", True, True, ("cpu", "float32")),
])
def test_resolved_spec_fixes_device_and_dtype_once(device, uses_gpus, local_cuda, expected):
    spec = resolved_spec(ModelSpec(path="/m", device=device), uses_gpus, local_cuda)
    assert (spec.device, spec.dtype) == expected
    assert resolved_spec(ModelSpec(path="/m", dtype="float32"), True, False).dtype == "float32"
