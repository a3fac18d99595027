"""A pilot started as a flow run: its parameters are untrusted, so the pool, the held-out file and the model must lie
where the deployment lets a run name them, and the pilot's folder is the output root's, never a parameter."""

from __future__ import annotations

from pathlib import Path

from capsel.config import Settings
from capsel.errors import CapselError
from capsel.evaluation.flow_config import allowed_file
from capsel.pilot.spec import PilotSpec
from capsel.run_parameters import check_run


def checked_run(spec: PilotSpec, allowed: Settings) -> PilotSpec:
    """`spec` with its files resolved inside the allowed folders; a RunParameterError or CapselError otherwise."""
    check_run(spec, allowed, models=[("model", spec.model, False, False)])
    if spec.eval == "humaneval" and not allowed.allow_code_execution:
        raise CapselError("humaneval executes model-written code; a flow runs it only where the operator set "
                          "CAPSEL_ALLOW_CODE_EXECUTION=true in the deployment's environment")
    files = {"pool": str(allowed_file(allowed, spec.pool))}
    for name in ("heldout", "fewshot"):
        if getattr(spec, name) is not None:
            files[name] = str(allowed_file(allowed, getattr(spec, name)))
    return spec.model_copy(update=files)


def run_folder(settings: Settings, pilot: str) -> Path:
    """Where a pilot of that id keeps its work: under the output root."""
    return settings.output_root / "pilots" / pilot
