"""Peak memory and speed of writing excluded.parquet for a large pool.

    python benchmarks/excluded_scale.py --candidates 2000000 --text-chars 600

Fills a throwaway DuckDB file (one CAP-scored pool over a few domains, 1% excluded by the scorer, 2%
duplicates and 0.5% quarantined rows), builds a 10% selection, then times `write_excluded` alone while
a thread samples the process's RSS. Prints one JSON object: rows written, seconds, rows/s, file size
and the RSS peak above the level before the write. The rows stream from DuckDB's COPY: under a DuckDB
memory_limit the peak stays near the limit whatever the pool's size (DuckDB spills to disk), where a
pandas frame of the rows would need at least their text bytes.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from pathlib import Path

import psutil

from capsel.db import open_db
from capsel.publish.excluded import write_excluded
from capsel.selection.params import SelectionParams
from capsel.selection.plan import build_selection
from capsel.selection.scoring_key import resolve_scoring_key

FILL = """
insert into sources values ('bench', '/bench.jsonl', repeat('0', 64), 0, $n, $n, 0, 0, 0, null, null, 'bench',
                            current_timestamp);
insert into candidates
select 'c' || lpad(i::varchar, 10, '0'), 'domain' || (i % $domains),
       'question ' || i || ' ' || repeat('q', $chars // 2), '', 'answer ' || i || ' ' || repeat('a', $chars // 2),
       'k' || i, 'bench', i + 1, 'bench', current_timestamp
from range($n) t(i);
insert into divergences
select 'c' || lpad(i::varchar, 10, '0'), 'bench-model', 'bench-config', 48, null,
       case when hash(i) % 100 = 0 then null else 0.05 + (hash(i, 1) % 1000) / 2000.0 end,
       case when hash(i) % 100 = 0 then null else 0.1 + 0.7 * (0.05 + (hash(i, 1) % 1000) / 2000.0)
            + (hash(i, 2) % 1000) / 20000.0 end,
       null, case when hash(i) % 100 = 0 then 'short_response' end, 'bench', current_timestamp
from range($n) t(i);
insert into duplicates
select 'bench', $n + i + 1, 'c' || lpad((i * 37 % $n)::varchar, 10, '0'), 'domain' || ((i * 37 % $n) % $domains),
       'bench'
from range($n // 50) t(i);
insert into quarantine
select 'bench', 2 * $n + i + 1, null, repeat('{', $chars), 'not_json', 'unexpected end', 'bench'
from range($n // 200) t(i);
"""


def peak_rss_during(work) -> tuple[object, int, int]:
    """Run `work()`; return its result, the RSS before, and the highest RSS sampled while it ran."""
    process, peak, done = psutil.Process(), [0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], process.memory_info().rss)
            time.sleep(0.02)

    before = process.memory_info().rss
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        result = work()
    finally:
        done.set()
        sampler.join()
    return result, before, max(peak[0], process.memory_info().rss)


def main() -> None:
    """Fill, select, then measure the write of excluded.parquet."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--candidates", type=int, default=1_000_000)
    parser.add_argument("--domains", type=int, default=4)
    parser.add_argument("--text-chars", type=int, default=600, help="characters of instruction + response")
    parser.add_argument("--memory-limit", default=None, help="DuckDB memory_limit, e.g. 2GB (default: DuckDB's)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        con = open_db(Path(scratch) / "bench.duckdb", memory_limit=args.memory_limit)
        params = {"n": args.candidates, "domains": args.domains, "chars": args.text_chars}
        for statement in filter(str.strip, FILL.split(";")):
            con.execute(statement, {name: value for name, value in params.items() if f"${name}" in statement})
        selection = build_selection(con, SelectionParams(budget="10%"), resolve_scoring_key(con))
        path = Path(scratch) / "excluded.parquet"
        started = time.perf_counter()
        funnel, before, peak = peak_rss_during(lambda: write_excluded(con, selection, path))
        seconds = time.perf_counter() - started
        rows = sum(entry["rows"] for entry in funnel if entry["stage"] not in ("read", "eligible", "selected"))
        print(json.dumps({
            "candidates": args.candidates, "text_chars": args.text_chars, "memory_limit": args.memory_limit,
            "rows_written": rows, "seconds": round(seconds, 1), "rows_per_s": round(rows / seconds),
            "file_mib": round(path.stat().st_size / 2**20, 1), "text_mib": round(rows * args.text_chars / 2**20),
            "rss_before_mib": round(before / 2**20), "rss_peak_mib": round(peak / 2**20),
            "rss_peak_above_before_mib": round((peak - before) / 2**20),
        }))
        con.close()


if __name__ == "__main__":
    main()
