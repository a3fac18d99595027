"""Named fault points: the process SIGKILLs itself at the point CAPSEL_FAULT_POINT names, for kill -9 tests.

A point sits wherever state changes (a write, a commit, a rename), so a test can crash the process exactly
there and check that a rerun ends where an uninterrupted run does. With the variable unset, which is every
production run, a point costs one comparison.
"""

from __future__ import annotations

import os
import signal
from functools import cache

# Every point, in the order a pipeline meets them; tests sweep this tuple and check it against the code.
FAULT_POINTS = (
    "ingest.after_framing",          # a batch framed, nothing of it written
    "ingest.mid_chunk",              # a chunk's candidates inserted, its duplicates not yet
    "ingest.before_commit",          # a unit's rows and counts written, not committed
    "ingest.after_commit",           # a unit committed (the last one with its run closed)
    "score.mid_batch",               # a batch's y-hat written, its divergences not yet
    "score.before_commit",           # a batch (or shard) of any scorer's results, y-hat alone too, not committed
    "score.after_commit",            # a batch (or shard) committed
    "select.before_publish",         # the selection built, nothing published
    "publish.before_staging",        # no staging folder yet
    "publish.after_staging",         # the staging folder complete and synced
    "publish.before_record_commit",  # the 'publishing' row written, not committed
    "publish.after_record_commit",   # the 'publishing' row committed, the folder still staged
    "upload.before_last_file",       # a folder uploaded to object storage but its manifest, written last
    "publish.after_rename",          # the folder in place, its row still 'publishing'
    "publish.before_commit",         # the row marked 'published', not committed
    "publish.after_commit",          # published, the run not yet closed
    "pipeline.after_ingest",         # a declared pipeline (a flow, the lab) between ingest and scoring
    "pipeline.after_score",          # ... between scoring and selecting
    "pipeline.before_select",        # ... with its residuals fitted, before select and publish
    "evaluate.between_results",      # one metric row of an evaluation written, the next not yet
)

FAULT_POINT_ENV = "CAPSEL_FAULT_POINT"


@cache
def _armed_point() -> str | None:
    # read from the environment, not Settings: a point sits deep in library code that holds no settings,
    # and it is a test hook, not something a user configures
    return os.environ.get(FAULT_POINT_ENV) or None


def fault_point(name: str) -> None:
    """Die here by SIGKILL when CAPSEL_FAULT_POINT equals `name`; do nothing otherwise."""
    if name == _armed_point():
        os.kill(os.getpid(), signal.SIGKILL)
