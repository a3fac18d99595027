"""Task: the model's rank survey and the paper's hidden-state U-shape verdict."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from capsel.db.progress_file import report_progress
from capsel.profile.check import check_model
from capsel.profile.verdict import Verdict


@task(name="check-rank-profile", cache_policy=NO_CACHE)
def check_rank_profile(
    model_path: str, trust_remote_code: bool, prompt_format: str = "auto", allow_pickle: bool = False
) -> Verdict:
    """Survey the scoring model's per-layer stable ranks and judge the U-shape (each layer reported to `capsel
    status`)."""
    _, verdict = check_model(model_path, trust_remote_code=trust_remote_code, prompt_format=prompt_format,
                             allow_pickle=allow_pickle, on_progress=lambda done, total: report_progress(done, total))
    return verdict
