"""The least a nightly reselect of a whole scored pool can cost on this machine, part by part, with nothing of
capsel's own queries in the way: whether the issue's goal (an increment within 5% of a full run) is in reach.

    python benchmarks/reselect_floor.py --workdir /tmp/pool_scale_inc \
        --full-run benchmarks/results/pool_scale_10m-add100k-cpu-2026-11-30-floor.jsonl

On a store that `benchmarks/pool_scale.py --add-rows N` left in `--workdir` (its last selection published), it
times, in this process, the parts every faithful reselect redoes for the old rows (DESIGN.md: the per-domain OLS
is over all scored candidates, so every z moves when rows are added):

- **z for every row, bare**: one hand-written query (not capsel's) that joins the scores to their domains once,
  fits each domain and standardises its residuals into a temp table; its z is compared with the published
  members' z, an independent check that it is the method's z;
- **excluded.parquet encoded, bare**: the published excluded.parquet, already in memory, written again: the
  Parquet encoding alone, with no query (every row left out, with its stage, reason, z, rank and texts);
- **great-expectations imported** in a fresh process, and **its validation of the members alone** (capsel's
  gate tables, GX with nothing else running).

Each part's wall and CPU seconds; `--full-run` (the JSONL pool_scale.py printed, its summary line last) adds the
budget (5% of the full run) and the floor: the increment's ingest of its new rows, none of their scoring, and the
parts' CPU seconds spread over every core, as if they overlapped perfectly.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import duckdb
from pool_scale import DB_NAME, tenth_per_domain, workdir_store

from capsel.publish.manifest import domain_entries
from capsel.publish.publish import selection_gate_spec
from capsel.quality.gate import check_tables, gate_tables
from capsel.selection.pinned_scores import pinned_cap_scores
from capsel.selection.plan import build_selection
from capsel.stages.select import selection_key

# DESIGN.md step 9 as plainly as SQL says it: the pool read once, OLS per domain, z over the residuals
BARE_Z_SQL = """
create temp table bare_z as
with pool as materialized (
    select candidates.domain, divergences.candidate_id, divergences.d_early, divergences.d_late
    from divergences
    join candidates using (candidate_id)
    where divergences.excluded_reason is null
        and divergences.model_fingerprint = $model_fingerprint
        and divergences.config_hash = $config_hash
),
fits as (
    select domain, regr_intercept(d_late, d_early) as alpha, regr_slope(d_late, d_early) as beta
    from pool
    group by domain
),
residuals as (
    select pool.candidate_id, pool.domain, pool.d_late - (fits.alpha + fits.beta * pool.d_early) as cap
    from pool
    join fits using (domain)
)
select candidate_id, (cap - avg(cap) over domain_pool) / stddev_samp(cap) over domain_pool as z
from residuals
window domain_pool as (partition by domain)
"""
MEMBERS_Z_DIFF_SQL = """
select count(*), max(abs(members.z - bare_z.z))
from read_parquet($members) as members
join bare_z using (candidate_id)
"""


def timed(work: Callable[[], Any]) -> tuple[Any, dict]:
    """`work()`'s result, and its wall and CPU seconds (this process's, every thread's)."""
    wall, cpu = time.perf_counter(), _cpu_seconds()
    result = work()
    return result, {"wall_s": round(time.perf_counter() - wall, 2), "cpu_s": round(_cpu_seconds() - cpu, 2)}


def _cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def last_selection(workdir: Path) -> Path:
    """The newest published selection folder of the workdir (ids sort by their creation time)."""
    folders = sorted(path for path in (workdir / "out" / "selections").glob("sel-*") if path.is_dir())
    if not folders:
        raise SystemExit(f"no published selection under {workdir / 'out' / 'selections'}: run pool_scale.py first")
    return folders[-1]


def bare_z(workdir: Path, memory_limit: str, selection: Path) -> dict:
    """The bare z query's seconds, and how far its z is from the published members' z."""
    with workdir_store(workdir, memory_limit) as ctx:
        key = selection_key(ctx, tenth_per_domain(workdir))
        assert key is not None
        params = {"model_fingerprint": key.model_fingerprint, "config_hash": key.config_hash}
        _, seconds = timed(lambda: ctx.con.execute(BARE_Z_SQL, params))
        members, max_diff = ctx.con.execute(MEMBERS_Z_DIFF_SQL, {"members": str(selection / "data.parquet")}
                                            ).fetchall()[0]
    return {**seconds, "members_compared": members, "max_abs_z_diff_from_published": max_diff}


def excluded_encoding(selection: Path, memory_limit: str) -> dict:
    """Seconds to write the published excluded.parquet's rows again from memory."""
    with duckdb.connect(config={"memory_limit": memory_limit}) as con, tempfile.TemporaryDirectory() as folder:
        con.execute("create table excluded as select * from read_parquet($path)",
                    {"path": str(selection / "excluded.parquet")})
        rows = con.execute("select count(*) from excluded").fetchall()[0][0]
        target = Path(folder) / "excluded.parquet"
        # what publish does: a relation written with DuckDB's Parquet writer (a COPY), here with no query under it
        _, seconds = timed(lambda: con.table("excluded").write_parquet(str(target)))
    return {**seconds, "rows": rows}


def gx_import() -> dict:
    """Wall seconds of `import great_expectations` in a fresh process (the import once per run)."""
    code = "import time; t = time.perf_counter(); import great_expectations; print(time.perf_counter() - t)"
    seconds = float(subprocess.run([sys.executable, "-c", code], check=True, stdout=subprocess.PIPE,
                                   text=True).stdout.split()[-1])
    return {"wall_s": round(seconds, 2)}


def gx_validation(workdir: Path, memory_limit: str) -> dict:
    """Seconds of the gate's GX run alone on the members of a selection built as select builds it."""
    with workdir_store(workdir, memory_limit) as ctx:
        request = tenth_per_domain(workdir)
        key = selection_key(ctx, request)
        with pinned_cap_scores(ctx.con, key):
            selection = build_selection(ctx.con, request.selection, key, None)
            counts = {domain["domain"]: domain["n_members"] for domain in domain_entries(selection)}
            tables = gate_tables(ctx.con, selection.members, selection_gate_spec(selection), key,
                                 selection.domain_stats, published_counts=counts)
    with tempfile.TemporaryDirectory() as folder:
        gate, seconds = timed(lambda: check_tables(tables, Path(folder), "reselect-floor"))
    return {**seconds, "members": len(tables.members), "gate_passed": gate.success}


def budget(full_run: Path, parts: dict, cores: int) -> dict:
    """The goal's budget from pool_scale.py's summary, and the floor: the increment's ingest of its new rows (none
    of their scoring, which a real model would add to) plus the parts' CPU seconds spread over every core."""
    summary = json.loads(full_run.read_text().splitlines()[-1])
    goal = round(0.05 * summary["total_seconds"], 1)
    stages = {stage["stage"]: stage["seconds"] for stage in summary["increment"]["stages"]}
    cpu = sum(part.get("cpu_s", part["wall_s"]) for part in parts.values())
    floor = round(stages["ingest"] + cpu / cores, 1)
    return {"full_run_s": summary["total_seconds"], "goal_s": goal,
            "increment_new_rows_ingest_s": stages["ingest"], "increment_new_rows_score_s": stages["score"],
            "old_rows_parts_cpu_s": round(cpu, 1), "cores": cores,
            "floor_s": floor, "floor_share_of_full_run": round(floor / summary["total_seconds"], 4),
            "goal_in_reach": floor <= goal}


def main() -> None:
    """Time each part on the workdir's store and its last selection; print one JSON object."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, required=True, help="a pool_scale.py workdir (store and output)")
    parser.add_argument("--memory-limit", default="3GB", help="DuckDB's memory_limit")
    parser.add_argument("--full-run", type=Path, help="the JSONL pool_scale.py --add-rows printed for this store")
    args = parser.parse_args()
    if not (args.workdir / DB_NAME).is_file():
        parser.error(f"{args.workdir / DB_NAME} does not exist: run benchmarks/pool_scale.py --workdir {args.workdir}")
    selection = last_selection(args.workdir)
    parts = {
        "z for every row, bare": bare_z(args.workdir, args.memory_limit, selection),
        "excluded.parquet encoded, bare": excluded_encoding(selection, args.memory_limit),
        "great-expectations imported": gx_import(),
        "great-expectations validation of the members": gx_validation(args.workdir, args.memory_limit),
    }
    command = f"python benchmarks/reselect_floor.py --workdir {args.workdir}"
    result: dict[str, Any] = {"command": command, "selection": selection.name, "parts": parts}
    if args.full_run:
        result["command"] += f" --full-run {args.full_run}"
        result["budget"] = budget(args.full_run, parts, os.cpu_count() or 1)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
