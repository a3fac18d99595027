"""Flow: `capsel pilot` as a Prefect run: which method, at which budget, for a model and a pool, with evidence."""

from __future__ import annotations

from pathlib import Path

from prefect import flow
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.logging import get_run_logger
from prefect.states import Failed, State

from capsel.config import load_settings
from capsel.errors import CapselError
from capsel.orchestration.summary_plots import png_markdown
from capsel.pilot.parameters import checked_run, run_folder
from capsel.pilot.run import PilotEvents, pilot_id, run_pilot
from capsel.pilot.spec import PilotSpec


@flow(name="capsel-pilot", log_prints=True)
def pilot_flow(pilot: PilotSpec) -> dict | State:
    """Replicate the pool into disjoint sub-pools, select each by every method at every budget, fine-tune and
    evaluate every selection, and decide per budget against the median of random draws (resumes a pilot of the
    same design under <output root>/pilots/).

    Args:
        pilot: the pool and model, methods, budgets, replicates, random draws, held-out rows, recipe and seeds
    """
    try:
        settings = load_settings()
        spec = checked_run(pilot, settings)
        result = run_pilot(spec, run_folder(settings, pilot_id(spec)), settings, PilotEvents(say=print))
    except CapselError as error:
        get_run_logger().error("%s", error)
        return Failed(message=f"{type(error).__name__}: {error}", data=error)
    _artifacts(result)
    return {key: result[key] for key in ("ok", "decisions", "report", "rows")}


def _artifacts(result: dict) -> None:
    """The decisions and the budget curve as markdown, every comparison as a table."""
    curve = Path(result["report"]).parent / "budget_curve.png"
    lines = ["# Which method, at which budget?", ""]
    lines += [f"- **{decision['budget']}**: {decision['verdict']} (p {decision['p']:.4f}, Holm "
              f"{decision['p_adjusted']:.4f}, least reachable {decision['p_floor']:.4f})"
              for decision in result["decisions"]]
    lines += ["", png_markdown(curve.read_bytes(), "budget curve"), "", f"Report: {result['report']}"]
    create_markdown_artifact("\n".join(lines), key=f"capsel-pilot-{result['pilot_id']}",
                             description="the pilot's decisions and budget curve")
    create_table_artifact([{key: comparison[key] for key in ("budget", "method", "mean_delta", "p_adjusted")}
                           | {"ci95": comparison["hierarchical"]["ci95"], "p": comparison["hierarchical"]["p"]}
                           for comparison in result["comparisons"]],
                          key=f"capsel-pilot-{result['pilot_id']}-comparisons",
                          description="each method against the random median, raw and Holm-adjusted p")
