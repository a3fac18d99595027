"""A run's part completes itself from its deployment's part, field by field, nested fields included."""

from __future__ import annotations

from pydantic import TypeAdapter

from capsel.methods.scorer_spec import ScorerSpec
from capsel.orchestration.deployment_parts import merged_part
from capsel.pipeline_config import SourceParams
from capsel.selection.params import SelectionParams

DEPLOYED_SOURCES = {"paths": ["/data/incoming"], "field_map": "instruction=q,response=a"}


def test_fields_the_run_sets_win_and_the_others_come_from_the_deployment():
    run = SourceParams.model_validate({"domain": "math"})
    merged = merged_part(run, DEPLOYED_SOURCES)
    assert merged.paths == ["/data/incoming"] and merged.field_map == "instruction=q,response=a"
    assert merged.domain == "math"
    again = merged_part(SourceParams.model_validate({"paths": ["/elsewhere"]}), DEPLOYED_SOURCES)
    assert again.paths == ["/elsewhere"] and again.field_map == "instruction=q,response=a"


def test_a_run_that_sets_nothing_is_the_deployments_part_and_no_deployment_leaves_it_alone():
    assert merged_part(SelectionParams(), {"budget": "5%", "out": "picked"}) == SelectionParams.model_validate(
        {"budget": "5%", "out": "picked"})
    given = SelectionParams.model_validate({"budget": "3"})
    assert merged_part(given, None) is given


def test_nested_fields_merge_and_another_method_replaces_the_part():
    specs = TypeAdapter(ScorerSpec)
    deployed = {"method": "cap", "model": {"path": "/models/m", "dtype": "float32"}}
    merged = merged_part(specs.validate_python({"method": "cap", "model": {"path": "/models/m2"}}), deployed)
    assert (merged.model.path, merged.model.dtype) == ("/models/m2", "float32")
    other = specs.validate_python({"method": "ppl", "model": {"path": "/models/n"}})
    assert merged_part(other, deployed) is other
