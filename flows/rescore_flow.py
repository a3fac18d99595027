"""Flow: new files only → score only the new candidates → refit over the whole pool → publish a new version."""

from __future__ import annotations

from capsel.flows.pipeline_flow import pipeline_flow

_DOC = """Ingest what arrived in the incoming folder(s) and, when anything is new, publish a new selection version.

    Files already ingested (same sha256) are no-ops and only pending candidates are scored, so
    a nightly run over an unchanged folder publishes nothing; older versions are never touched.
    The rank-profile check is off here unless asked: a schedule should not wait on a survey.
    """

rescore_flow = pipeline_flow("rescore", __name__, _DOC, check_profile=False, publish_unchanged=False)
