"""A pilot started as a flow run: its parameters are untrusted, so the pool, the held-out file and the model must lie
where the deployment lets a run name them, and the pilot's folder is the output root's, never a parameter."""

from __future__ import annotations

from pathlib import Path

from capsel.config import Settings
from capsel.evaluation.flow_config import allowed_file
from capsel.pilot.spec import PilotSpec
from capsel.run_parameters import check_run


def checked_run(spec: PilotSpec, allowed: Settings) -> PilotSpec:
    """`spec` with its files resolved inside the allowed folders; a RunParameterError or CapselError otherwise."""
    check_run(spec, allowed, models=[("model", spec.model, False, False)])
    files = {"pool": str(allowed_file(allowed, spec.pool))}
    if spec.heldout is not None:
        files["heldout"] = str(allowed_file(allowed, spec.heldout))
    return spec.model_copy(update=files)


def run_folder(settings: Settings, pilot: str) -> Path:
    """Where a pilot of that id keeps its work: under the output root."""
    return settings.output_root / "pilots" / pilot
