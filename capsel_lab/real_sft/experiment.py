"""The real-model SFT comparison, replicated over pools: each pool a fresh draw of GSM8K train rows (its own seed,
not the trainer's), scored, selected by each method, fine-tuned with LlamaFactory and evaluated with the base
model through capsel's own stages; then each paired delta tested across pools, and CAP ranked among random subsets.

Every step is resumable (see pool_run.py); real_sft.json holds the whole result.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from capsel.config import Settings
from capsel.versioning import code_version
from capsel_lab.real_sft.plan import LAB_RECIPE, pool_folder
from capsel_lab.real_sft.pool_run import pool_seconds, run_pool
from capsel_lab.real_sft.replicates import across_pools, method_means, null_rank
from capsel_lab.real_sft.spec import RealSftSpec

SUMMARY_FILE, WALL_FILE = "real_sft.json", "wall_s.json"


@dataclass
class RealSftResult:
    """Every pool's result, the statistics across them, and the wall time of every run that worked on it."""

    summary: dict = field(default_factory=dict)
    path: Path | None = None


def run_real_sft(spec: RealSftSpec, out_dir: Path, settings: Settings,
                 say: Callable[[str], None] = print) -> RealSftResult:
    """Run (or resume) every pool, then test the deltas across pools; write real_sft.json."""
    out_dir.mkdir(parents=True, exist_ok=True)
    times = RunTimes(out_dir / WALL_FILE)
    pools = []
    for index, pool_seed in enumerate(spec.pool_seeds(), start=1):
        say(f"pool {pool_seed} ({index} of {spec.pools})")
        folder = pool_folder(out_dir, pool_seed)
        pools.append({**run_pool(spec.pool_plan(pool_seed), folder, settings, say), "recorded_s": pool_seconds(folder)})
        times.update()
    walls = times.update()
    summary = {
        "spec": asdict(spec), "recipe_overrides": LAB_RECIPE, "capsel_version": code_version(),
        "wall_s": sum(walls), "runs_wall_s": walls,
        "methods": method_means(pools), "comparisons": across_pools(pools),
        "null": null_rank(pools[0]) if spec.null_draws else None, "pools": pools,
    }
    path = out_dir / SUMMARY_FILE
    path.write_text(json.dumps(summary, indent=1, default=str) + "\n", encoding="utf-8")
    return RealSftResult(summary, path)


class RunTimes:
    """Every run's seconds on one folder (a resumed lab adds up its parts), this run's written after each pool, so
    a run that is killed keeps its time up to the last pool it finished."""

    def __init__(self, path: Path) -> None:
        self.path, self.started = path, time.monotonic()
        self.walls = [*(json.loads(path.read_text()) if path.is_file() else []), 0.0]
        self._write()

    def update(self) -> list[float]:
        """Every run's seconds, this one's as of now."""
        self.walls[-1] = round(time.monotonic() - self.started, 1)
        self._write()
        return list(self.walls)

    def _write(self) -> None:
        self.path.write_text(json.dumps(self.walls) + "\n", encoding="utf-8")
