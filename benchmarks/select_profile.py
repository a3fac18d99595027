"""Where a whole-pool refit and reselect spends its time: the fit, the selection, the gate and each published file.

    python benchmarks/select_profile.py --workdir /tmp/pool_scale_inc

Runs, in this fresh process, what a nightly increment redoes for the old rows of a store that
`benchmarks/pool_scale.py` left in `--workdir` (residualize, then select, gate and publish another selection
of 10% into its output folder) under cProfile, and prints one JSON object: the seconds of each part, by the
cumulative time of the function that does it.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import time
from dataclasses import replace
from pathlib import Path

from pool_scale import DB_NAME, tenth_per_domain, workdir_store

from capsel.stages.context import run_scope
from capsel.stages.residualize import ResidualizeRequest, residualize
from capsel.stages.select import select_and_publish, selection_key

# part -> (file, function) whose cumulative time it is
PARTS = {
    "residualize": ("capsel/stages/residualize.py", "residualize"),
    "fit": ("capsel/selection/residualize.py", "fit_domains"),
    "CAP's z pinned (once per stage)": ("capsel/selection/pinned_scores.py", "pinned_cap_scores"),
    "select, gate, publish": ("capsel/stages/select.py", "select_and_publish"),
    "picks": ("capsel/selection/picks.py", "top_residual_z"),
    # written on a thread of its own (cProfile sees only this one) while the gate and the other files are made
    "excluded.parquet: left to wait for after them": ("capsel/db/background.py", "result"),
    "gate: lineage re-read": ("capsel/quality/gate.py", "gate_tables"),
    "gate": ("capsel/quality/gate.py", "check_tables"),
    "gate: suite built (great-expectations imported)": ("capsel/quality/expectations.py", "member_expectations"),
    "report: scatter points": ("capsel/publish/report.py", "report_points"),
    "report": ("capsel/publish/report.py", "write_report"),
    "members' data files": ("capsel/publish/data_files.py", "write_data_files"),
}


def main() -> None:
    """Profile residualize and select_and_publish on the workdir's store; print the parts' seconds."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, required=True, help="a pool_scale.py workdir (its store and output)")
    parser.add_argument("--memory-limit", default="3GB", help="DuckDB's memory_limit")
    args = parser.parse_args()
    if not (args.workdir / DB_NAME).is_file():
        parser.error(f"{args.workdir / DB_NAME} does not exist: run benchmarks/pool_scale.py --workdir {args.workdir}")
    request = tenth_per_domain(args.workdir)
    profile = cProfile.Profile()
    with workdir_store(args.workdir, args.memory_limit) as ctx:
        key = selection_key(ctx, request)
        started = time.perf_counter()
        profile.enable()
        with run_scope(ctx) as in_run:  # as a flow's run: its select step reads the z residualize pinned
            fitted = residualize(ResidualizeRequest(key), in_run)
            selected = select_and_publish(replace(request, key=key, fits=tuple(fitted.fits)), in_run)
        profile.disable()
        wall = time.perf_counter() - started
    stats = pstats.Stats(profile).stats  # (file, line, function) -> (calls, primitive calls, own, cumulative, ...)
    cumulative = {(file, name): row[3] for (file, _, name), row in stats.items()}
    # a part whose function the profile never saw (renamed, moved) is null, not 0
    parts = {part: next((round(seconds, 1) for (file, name), seconds in cumulative.items()
                         if file.endswith(path) and name == function), None)
             for part, (path, function) in PARTS.items()}
    print(json.dumps({"command": "python benchmarks/select_profile.py --workdir " + str(args.workdir),
                      "pool_candidates": sum(pool.size for pool in selected.selection.pools),
                      "members": len(selected.selection.members),
                      "wall_s": round(wall, 1), "parts_s": parts}, indent=2))


if __name__ == "__main__":
    main()
