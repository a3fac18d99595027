"""Validate OpenLineage events offline against the spec's JSON schemas (vendored in openlineage_spec/)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import orjson
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

SPEC_DIR = Path(__file__).with_name("openlineage_spec")
EVENT_SCHEMA = "https://openlineage.io/spec/2-0-2/OpenLineage.json"
# the base facet each place in an event takes (OpenLineage.json's $defs)
SLOT_BASES = {"run": "RunFacet", "job": "JobFacet", "facets": "DatasetFacet", "inputFacets": "InputDatasetFacet",
              "outputFacets": "OutputDatasetFacet"}
# an input facet OpenLineage's own dbt integration also writes among dataset facets
ALSO_DATASET_FACETS = {"dataQualityAssertions"}


@cache
def registry() -> Registry:
    """Every vendored schema, by its $id."""
    resources = [Resource.from_contents(orjson.loads(path.read_bytes())) for path in sorted(SPEC_DIR.rglob("*.json"))]
    return Registry().with_resources((resource.id(), resource) for resource in resources)


def validate_event(event: dict) -> list[str]:
    """Validate a RunEvent and each of its facets; returns the facet keys checked (raises on the first error)."""
    _validator(EVENT_SCHEMA).validate(event)
    checked = []
    places = [("run", event["run"].get("facets", {})), ("job", event["job"].get("facets", {}))] + [
        (slot, dataset.get(slot, {}))
        for dataset in [*event.get("inputs", []), *event.get("outputs", [])]
        for slot in ("facets", "inputFacets", "outputFacets")
    ]
    for slot, facets in places:
        for key, facet in facets.items():
            validate_facet(slot, key, facet)
            checked.append(key)
    return checked


def validate_facet(slot: str, key: str, facet: dict) -> None:
    """A facet against the schema its _schemaURL names, under its standard key, in a place its kind may stand."""
    url = facet["_schemaURL"]
    document, _, pointer = url.partition("#")
    contents = registry().contents(document)  # raises for a schema the spec does not publish
    assert key in contents["properties"], f"{key!r} is not the key of {document}"
    assert contents["properties"][key]["$ref"] == f"#{pointer}", f"{key!r} names another facet of {document}"
    _validator(document).validate({key: facet})
    base = contents["$defs"][pointer.rsplit("/", 1)[-1]]["allOf"][0]["$ref"].rsplit("/", 1)[-1]
    allowed = {SLOT_BASES[slot]} | ({"InputDatasetFacet"} if slot == "facets" and key in ALSO_DATASET_FACETS else set())
    assert base in allowed, f"{key!r} is a {base}, not allowed among {slot}"


def _validator(url: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": url}, registry=registry(), format_checker=Draft202012Validator.FORMAT_CHECKER)
