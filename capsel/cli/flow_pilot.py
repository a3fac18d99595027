"""`capsel flow pilot`: the pilot as a Prefect flow run (`capsel-pilot`), its options those of `capsel pilot`."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from capsel.cli.model_options import generated_options, validated
from capsel.cli.pilot import DESIGN


@generated_options(design=DESIGN)
def pilot(
    pool: Annotated[str, typer.Argument(help="The pool, inside the output root or the incoming folder (a flow run "
                                             "reads files only there).", show_default=False)],
    design: dict[str, Any],
) -> None:
    """Run the pilot flow: replicated selections fine-tuned and evaluated against the median of random draws."""
    from capsel.cli.flow_run import run_flow
    from capsel.flows.pilot_flow import pilot_flow
    from capsel.pilot.spec import PilotSpec

    run_flow(pilot_flow, {"pilot": validated(PilotSpec, {**design, "pool": pool})})
