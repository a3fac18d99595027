"""Flow: ingest → generate + score (sharded, resumable) → residualize → gate → publish one selection."""

from __future__ import annotations

from capsel.flows.pipeline_flow import pipeline_flow

_DOC = """Bring the pool up to date with the given sources and publish a selection of it.

    Each part is its own parameter, so a run overrides one (say `selection`) and keeps the
    deployment's others. No `scoring` means CAP with $CAPSEL_MODEL; no source paths, the
    incoming folder ($CAPSEL_INCOMING_DIR). `check_profile` surveys the model's rank profile
    once per model (the verdict is kept in the database) and warns without the U-shape.
    """

select_flow = pipeline_flow("select", __name__, _DOC, check_profile=True, publish_unchanged=True)
