"""Screenshot of the gate report as headless Chromium draws it with the network cut (for the README).

Runs the real gate on a small scored pool with one member's z blanked and one member taken twice, so
the page shows failing rows beside passing ones. Run from a checkout with the dev install:

    .venv/bin/python docs/screenshots/gate_report.py [--out docs/screenshots/gate-report-offline.png]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the tests' scored pool and Chromium helper

from capsel.db import open_db  # noqa: E402
from capsel.quality.expectations import gate_spec  # noqa: E402
from capsel.quality.gate import check_selection  # noqa: E402
from capsel.selection.params import SelectionParams  # noqa: E402
from capsel.selection.plan import build_selection  # noqa: E402
from capsel.selection.scoring_key import resolve_scoring_key  # noqa: E402
from tests.support.chromium import render_offline, screenshot_offline  # noqa: E402
from tests.support.scored_pool import make_pool  # noqa: E402


def main() -> None:
    """Gate a corrupted selection and capture its report offline."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots" / "gate-report-offline.png")
    args = parser.parse_args()
    con = open_db(":memory:")
    make_pool(con, {"code": 40, "math": 60}, n_excluded=3)
    key = resolve_scoring_key(con)
    selection = build_selection(con, SelectionParams(budget="4"), key)
    members = pd.concat([selection.members, selection.members.iloc[[0]]], ignore_index=True)
    members.loc[1, "z"] = float("nan")
    spec = gate_spec({q.domain: q.k for q in selection.quotas}, residualized=True, scored=True, has_score=True)
    with tempfile.TemporaryDirectory() as scratch:
        result = check_selection(con, members, spec, key, selection.domain_stats, Path(scratch) / "gate",
                                 "sel-20261125T120000Z-5e1ec7ed")
        if render_offline(result.report_index).requested:
            raise SystemExit("the report asked the network for something")
        screenshot_offline(result.report_index, args.out, height=2750)
    print(f"wrote {args.out} ({len(result.failures)} of {result.n_expectations} expectations failing)")


if __name__ == "__main__":
    main()
