"""`capsel lab sft --pool real` as a preset of `capsel pilot`: the bundled GSM8K train rows with seeded junk as the
pool, held-out rows drawn apart from it, and the pilot's design, statistics and report; the lab adds how much of the
junk each selection took (its labels say which rows are junk)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

from capsel.db import open_db
from capsel.db.records import fetch_records
from capsel.pilot.run import PilotEvents, run_pilot
from capsel.pilot.spec import PilotSpec
from capsel_lab.real_sft.pool import write_lab_files

LAB_FILE = "lab.json"


@dataclass(frozen=True)
class RealLab:
    """The lab's knobs: pools (the pilot's replicates) of `n_pool` clean rows plus junk, and the pilot's options."""

    model: str
    pools: int = 3
    seed: int = 0
    n_pool: int = 200
    n_heldout: int = 100
    junk_share: float = 0.05
    budgets: tuple[str, ...] = ("10%",)
    methods: tuple[str, ...] = ("cap", "ppl", "ifd")
    random_draws: int = 5
    min_steps: int = 20
    profile: str = "cpu-small"
    prompt_format: str = "auto"
    allow_dirty: bool = False


def run_real_lab(lab: RealLab, out_dir: Path, settings, events: PilotEvents | None = None,
                 say: Callable[[str], None] = print) -> dict:
    """The pilot's result on the lab's pool, with the junk each cell's selection took (also in lab.json)."""
    files = write_lab_files(out_dir / "data", lab.pools * lab.n_pool, lab.n_heldout, lab.junk_share, lab.seed)
    heldout = out_dir / "data" / "heldout-rows.jsonl"
    with open(files.heldout, encoding="utf-8") as source, open(heldout, "w", encoding="utf-8") as target:
        for line in source:
            row = json.loads(line)
            target.write(json.dumps({"instruction": row["question"], "response": row["answer"],
                                     "domain": row["domain"]}) + "\n")
    spec = PilotSpec(pool=str(files.pool), model=lab.model, heldout=str(heldout), replicates=lab.pools,
                     budgets=list(lab.budgets), methods=list(lab.methods), random_draws=lab.random_draws,
                     min_steps=lab.min_steps, profile=lab.profile, prompt_format=lab.prompt_format,
                     seed=lab.seed, allow_dirty=lab.allow_dirty)
    result = run_pilot(spec, out_dir / "pilot", settings, events or PilotEvents(say=say))
    junk = junk_taken(out_dir / "pilot", result["cells"], files.labels)
    (out_dir / LAB_FILE).write_text(json.dumps({"lab": lab.__dict__, "junk": junk}, indent=1, default=list) + "\n")
    return {**result, "junk": junk}


def junk_taken(folder: Path, cells: list[dict], labels: Path) -> dict[str, int]:
    """Junk rows among each cell's selection, by cell."""
    junk = set(pd.read_csv(labels).query("lab_label == 'junk'")["candidate_id"])
    taken = {}
    for replicate in sorted({cell["replicate"] for cell in cells}):
        con = open_db(folder / f"replicate-{replicate}" / "capsel.duckdb", read_only=True)
        try:
            members = fetch_records(con, "pilot/selection_member_ids")
        finally:
            con.close()
        by_selection: dict[str, int] = {}
        for member in members:
            by_selection[member["selection_id"]] = (by_selection.get(member["selection_id"], 0)
                                                    + (member["candidate_id"] in junk))
        for cell in cells:
            if cell["replicate"] == replicate:
                taken[cell["cell"]] = by_selection.get(cell["selection_id"], 0)
    return taken
