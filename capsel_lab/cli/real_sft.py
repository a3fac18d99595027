"""`capsel lab sft --pool real`: the pilot's design on the bundled GSM8K train rows with seeded junk."""

from __future__ import annotations

from pathlib import Path

from capsel.cli.common import console, settings_for
from capsel.cli.tables import print_table
from capsel.cli.wrapping import print_unbroken
from capsel.errors import OptionError
from capsel.terminal_text import TextTable, plain
from capsel_lab.real_sft.preset import RealLab, run_real_lab

REAL_MODELS = ("smollm2-135m-instruct", "gemma3-270m")


def run_real(lab: RealLab, out_dir: Path) -> None:
    """Run (or resume) the lab's pilot, then print its decisions and the junk each method took."""
    if not lab.model:
        raise OptionError(f"--pool real fine-tunes a real model: name one with --model ({', '.join(REAL_MODELS)})")
    from capsel.cli.pilot_progress import PilotBars

    with PilotBars() as bars:
        result = run_real_lab(lab, out_dir, settings_for(), bars.events())
    print_table(console, junk_table(result))
    for decision in result["decisions"]:
        console.print(plain(f"{decision['budget']}: {decision['verdict']} (p {decision['p']:.4f}, Holm "
                            f"{decision['p_adjusted']:.4f}, least reachable {decision['p_floor']:.4f})"))
    print_unbroken(console, plain(result["report"]))


def junk_table(result: dict) -> TextTable:
    """Per budget and method: mean held-out loss over replicates and draws, rows and junk taken."""
    table = TextTable(title="held-out loss per method (mean over pools and draws) and the junk each took")
    for name in ("budget", "method", "cells", "rows", "junk", "loss"):
        table.add_column(name, justify="left" if name in ("budget", "method") else "right")
    groups: dict[tuple[str, str], list[dict]] = {}
    for cell in result["cells"]:
        groups.setdefault((cell["budget"], cell["method"]), []).append(cell)
    for (budget, method), cells in groups.items():
        table.add_row(budget, method, str(len(cells)), f"{sum(c['rows'] for c in cells) / len(cells):.1f}",
                      f"{sum(result['junk'][c['cell']] for c in cells) / len(cells):.1f}",
                      f"{sum(c['value'] for c in cells) / len(cells):.4f}")
    return table
